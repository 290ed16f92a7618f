#!/usr/bin/env bash
# Install the programs the test suites run against, from Debian's packages only:
#   beanstalkd          the real beanstalkd 1.12, the reference server
#   php-cli + php-pda-pheanstalk   the PHP client pheanstalk (tests/system/clients/pheanstalk.php)
#   ruby + ruby-beaneater          the Ruby client beaneater (tests/system/clients/beaneater.rb)
#   openssl             makes the certificates of the TLS tests (not in a minimal Debian)
#   stunnel4            docs/tls.md's stunnel client-mode setup (tests/system/tls_clients_test.ts)
#   chromium            the browser the dashboard test drives headless (puppeteer-core)
#   gcc                 builds the bench's native load generator (bench/native; the
#                       bench smoke test runs it, and falls back to the JS one without)
#   postgresql          the database of the --pg engine: the tests start a throwaway
#                       cluster of their own (tests/harness/postgres.ts) as user postgres;
#                       the package's own cluster is never used
#   systemd             systemd-socket-activate, which passes a listening socket as
#                       systemd does (tests/system/socket_activation_test.ts), and
#                       systemd-analyze; nothing is started, only those programs are used
# The Node clients (node-beanstalk, fivebeans, jackd) are devDependencies in
# package.json and come with `npm ci`; Node itself is on every machine here.
#
# Idempotent: when every package is already installed it changes nothing and does
# not touch the network. Run as root (CI does), or with sudo available.
set -euo pipefail

PACKAGES=(beanstalkd php-cli php-pda-pheanstalk ruby ruby-beaneater openssl stunnel4 chromium systemd gcc postgresql)
# Node runs the Node client scripts; install Debian's only if there is none at all.
if ! command -v node >/dev/null 2>&1; then
  PACKAGES+=(nodejs)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" != "installed" ]; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-test-deps: already installed: ${PACKAGES[*]}"
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "install-test-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-test-deps: installing ${missing[*]}"
"${SUDO[@]}" apt-get -o Acquire::Retries=3 update
"${SUDO[@]}" apt-get -o Acquire::Retries=3 install -y --no-install-recommends "${missing[@]}"

# The packages' Debian postinst may start a system beanstalkd on 11300; the tests
# never use it (each starts its own on a free 127.0.0.1 port), so leave it be.
for p in "${PACKAGES[@]}"; do
  if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" != "installed" ]; then
    echo "install-test-deps: $p is still not installed" >&2
    exit 1
  fi
done
echo "install-test-deps: ok"
