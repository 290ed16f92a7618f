<?php
// pheanstalk (Debian's php-pda-pheanstalk, 4.x) over TLS with a client certificate,
// using nothing but its public SocketFactoryInterface: docs/tls.md's "native TLS" way.
// Usage: php tests/system/clients/pheanstalk_tls.php HOST PORT CA_FILE CERT_FILE KEY_FILE
// (CERT_FILE and KEY_FILE "-": present no client certificate.)
declare(strict_types=1);

require getenv('PHEANSTALK_AUTOLOAD') ?: '/usr/share/php/Pheanstalk/autoload.php';

use Pheanstalk\Contract\SocketFactoryInterface;
use Pheanstalk\Contract\SocketInterface;
use Pheanstalk\Pheanstalk;
use Pheanstalk\Socket\FileSocket;

[, $host, $port, $ca, $cert, $key] = $argv;

final class TlsSocket extends FileSocket
{
    public function __construct(string $target, array $ssl)
    {
        $context = stream_context_create(['ssl' => $ssl]);
        $socket = @stream_socket_client($target, $errno, $error, 10, STREAM_CLIENT_CONNECT, $context);
        if ($socket === false) {
            throw new RuntimeException("connect $target: $error ($errno)");
        }
        $this->socket = $socket;
    }
}

final class TlsSocketFactory implements SocketFactoryInterface
{
    public function __construct(private string $target, private array $ssl) {}

    public function create(): SocketInterface
    {
        return new TlsSocket($this->target, $this->ssl);
    }
}

$client = Pheanstalk::createWithFactory(new TlsSocketFactory("tls://$host:$port", [
    'cafile' => $ca,
    'peer_name' => 'localhost',
    'verify_peer' => true,
] + ($cert === '-' ? [] : ['local_cert' => $cert, 'local_pk' => $key])));
$id = $client->useTube('tls-php')->put('over TLS from PHP');
$job = $client->watchOnly('tls-php')->reserveWithTimeout(0);
if ($job === null || $job->getId() !== $id->getId() || $job->getData() !== 'over TLS from PHP') {
    fwrite(STDERR, "pheanstalk-tls: FAIL: reserved " . var_export($job, true) . "\n");
    exit(1);
}
$client->delete($job);
echo "pheanstalk-tls: ok\n";
