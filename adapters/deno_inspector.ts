// Deno 2.9.2 and later start the V8 inspector on 127.0.0.1:9229 when the process gets
// SIGUSR1 (as Node does), and Deno 2.9.6 has no flag, option or variable to turn that
// off. SIGUSR1 is beanstalkd's drain signal, which operators send to production queues,
// so it must not open a debugger port. Our SIGUSR1 listener usually runs before the
// runtime tries to bind (seen on 2.9.6), so it takes 127.0.0.1:9229 itself for a moment:
// the inspector then fails to start ("Failed to start inspector server" on stderr), and
// the placeholder, which never accepts a connection, is closed again. When the runtime
// wins that race (seen under load), its inspector is closed as soon as it is seen.
import inspector from "node:inspector";

const INSPECTOR = { hostname: "127.0.0.1", port: 9229 } as const;
/** How long the placeholder holds the port after a SIGUSR1. */
const HOLD_MS = 1000;
/** How long to watch for an inspector that started anyway. */
const WATCH_MS = 5000;

/**
 * Call at startup, then call the returned function on every SIGUSR1. An inspector the
 * operator asked for (--inspect) is left alone.
 */
export function keepInspectorShut(): () => void {
  if (inspector.url() !== undefined) return () => {};
  return () => {
    let placeholder: Deno.Listener | undefined;
    try {
      placeholder = Deno.listen({ ...INSPECTOR, transport: "tcp" });
    } catch { /* 9229 is taken: the inspector cannot bind it either */ }
    setTimeout(() => placeholder?.close(), HOLD_MS);
    const deadline = Date.now() + WATCH_MS;
    const check = () => {
      if (inspector.url() !== undefined) inspector.close();
      if (Date.now() < deadline) setTimeout(check, 5);
    };
    check();
  };
}
