<?php
// The PHP client pheanstalk (Debian's php-pda-pheanstalk, 4.x) against a fresh server.
// Usage: php tests/system/clients/pheanstalk.php HOST PORT
declare(strict_types=1);

$autoload = getenv('PHEANSTALK_AUTOLOAD') ?: '/usr/share/php/Pheanstalk/autoload.php';
if (!is_file($autoload)) {
    fwrite(STDERR, "pheanstalk: FAIL at (start): $autoload not found (apt-get install php-pda-pheanstalk)\n");
    exit(2);
}
require $autoload;

use Pheanstalk\Job;
use Pheanstalk\JobId;
use Pheanstalk\Pheanstalk;

const CLIENT = 'pheanstalk';
const TUBE = 'client-pheanstalk';
const OTHER = TUBE . '-other';
const LIMIT_SECONDS = 30;

$STEP = '(start)';
$CHECKS = 0;

final class Mismatch extends \Exception {}

function step(string $name): void { global $STEP; $STEP = $name; }

function show($v): string { return var_export($v, true); }

function eq(string $what, $got, $want): void
{
    global $CHECKS;
    $CHECKS++;
    if ($got !== $want) {
        throw new Mismatch("$what: expected " . show($want) . ', got ' . show($got));
    }
}

function ok(string $what, bool $cond, $got = null): void
{
    global $CHECKS;
    $CHECKS++;
    if (!$cond) {
        throw new Mismatch($what . ($got === null ? '' : ': got ' . show($got)));
    }
}

/** A job as [id, body], or null. */
function job(?Job $j): ?array { return $j === null ? null : [$j->getId(), $j->getData()]; }

/** A stats reply as a plain array, values unquoted strings. */
function statsArray($resp): array
{
    $out = [];
    foreach ($resp as $k => $v) {
        $v = (string) $v;
        if (strlen($v) >= 2 && $v[0] === '"' && substr($v, -1) === '"') $v = substr($v, 1, -1);
        $out[$k] = $v;
    }
    return $out;
}

function hasKeys(string $what, array $a, array $keys): void
{
    global $CHECKS;
    foreach ($keys as $k) {
        $CHECKS++;
        if (!array_key_exists($k, $a)) {
            throw new Mismatch("$what: missing key \"$k\" (keys: " . implode(', ', array_keys($a)) . ')');
        }
    }
}

function fields(string $what, array $a, array $want): void
{
    global $CHECKS;
    foreach ($want as $k => $v) {
        $CHECKS++;
        if (!array_key_exists($k, $a)) throw new Mismatch("$what: missing key \"$k\"");
        if ($a[$k] !== (string) $v) {
            throw new Mismatch("$what: $k expected " . show((string) $v) . ', got ' . show($a[$k]));
        }
    }
}

/** Expect $fn to throw an exception whose class or message matches $pattern. */
function throws(string $what, callable $fn, string $pattern): void
{
    global $CHECKS;
    $CHECKS++;
    try {
        $v = $fn();
    } catch (Mismatch $e) {
        throw $e;
    } catch (\Throwable $e) {
        $text = get_class($e) . ': ' . $e->getMessage();
        if (!preg_match($pattern, $text)) throw new Mismatch("$what: expected an error matching $pattern, got $text");
        return;
    }
    throw new Mismatch("$what: expected an error, got " . show($v));
}

/** A JSON file of this repository's tests, decoded. */
function readJson(string $path): array
{
    $text = file_get_contents(__DIR__ . '/' . $path);
    $v = $text === false ? null : json_decode($text, true);
    if (!is_array($v)) throw new \RuntimeException("cannot read $path");
    return $v;
}

// The stats keys, and what every client script expects by step (scenario.json says how).
$KEYS = readJson('../../harness/stats_keys.json');
define('STATS_KEYS', $KEYS['stats']);
define('STATS_JOB_KEYS', $KEYS['stats-job']);
define('STATS_TUBE_KEYS', $KEYS['stats-tube']);
define('SCENARIO', readJson('scenario.json'));

/** The fields scenario.json expects of the stats-job or stats-tube reply at the current step. */
function want(): array
{
    global $STEP;
    if (!isset(SCENARIO['fields'][$STEP])) throw new \RuntimeException("scenario.json has no fields for step $STEP");
    return SCENARIO['fields'][$STEP];
}

/** `stats` at the end, as scenario.json says it grew from $before (the first `stats`). */
function grown(array $before): array
{
    $out = [];
    foreach (SCENARIO['grown'] as $k => $d) $out[$k] = (int) $before[$k] + $d;
    return $out;
}

function scenario(string $host, int $port): void
{
    step('connect');
    $p = Pheanstalk::create($host, $port, 5);

    step('stats (before)');
    $s0 = statsArray($p->stats());
    hasKeys('stats', $s0, STATS_KEYS);
    ok('stats version is non-empty', $s0['version'] !== '', $s0['version']);
    ok('stats current-connections >= 1', (int) $s0['current-connections'] >= 1, $s0['current-connections']);

    step('use');
    $p->useTube(TUBE);
    step('list-tube-used');
    eq('list-tube-used', $p->listTubeUsed(true), TUBE);

    step('watch');
    $p->watch(TUBE);
    step('ignore default');
    $p->ignore('default');
    step('list-tubes-watched');
    eq('list-tubes-watched', $p->listTubesWatched(true), [TUBE]);
    step('ignore last watched tube (NOT_IGNORED)');
    throws('ignore of the only watched tube', fn () => $p->ignore(TUBE), '/NOT_IGNORED/');
    // The refusal must leave the watch list as it was; ask the server.
    eq('list-tubes-watched after NOT_IGNORED', $p->listTubesWatched(true), [TUBE]);

    step('put');
    $body1 = 'hello tubeway';
    $id1 = $p->put($body1, 10, 0, 30)->getId();
    ok('put id is a positive integer', $id1 > 0, $id1);

    step('peek <id>');
    eq('peek', job($p->peek(new JobId($id1))), [$id1, $body1]);
    step('peek-ready');
    eq('peek-ready', job($p->peekReady()), [$id1, $body1]);
    step('peek-delayed (none)');
    eq('peek-delayed on a tube with no delayed job', $p->peekDelayed(), null);
    step('peek-buried (none)');
    eq('peek-buried on a tube with no buried job', $p->peekBuried(), null);

    step('stats-job (ready)');
    $j1 = statsArray($p->statsJob(new JobId($id1)));
    hasKeys('stats-job', $j1, STATS_JOB_KEYS);
    fields('stats-job', $j1, ['id' => $id1, 'tube' => TUBE] + want());

    step('stats-tube (one ready)');
    $t1 = statsArray($p->statsTube(TUBE));
    hasKeys('stats-tube', $t1, STATS_TUBE_KEYS);
    fields('stats-tube', $t1, ['name' => TUBE] + want());

    step('reserve');
    $r = $p->reserve();
    eq('reserve', job($r), [$id1, $body1]);
    step('stats-job (reserved)');
    fields('stats-job', statsArray($p->statsJob($r)), want());
    step('stats-tube (one reserved)');
    fields('stats-tube', statsArray($p->statsTube(TUBE)), want());

    step('touch');
    $p->touch($r);
    step('stats-job (after touch)');
    $jt = statsArray($p->statsJob($r));
    fields('stats-job', $jt, want());
    ok('stats-job time-left <= ttr after touch', (int) $jt['time-left'] <= 30, $jt['time-left']);

    step('release with delay');
    $p->release($r, 20, 60);
    step('stats-job (delayed)');
    fields('stats-job', statsArray($p->statsJob($r)), want());
    step('peek-delayed');
    eq('peek-delayed', job($p->peekDelayed()), [$id1, $body1]);
    step('peek-ready (none)');
    eq('peek-ready with only a delayed job', $p->peekReady(), null);
    step('stats-tube (one delayed)');
    fields('stats-tube', statsArray($p->statsTube(TUBE)), want());

    step('kick (delayed)');
    eq('kick count', $p->kick(5), 1);
    step('stats-job (kicked)');
    fields('stats-job', statsArray($p->statsJob($r)), want());

    step('reserve (again)');
    $r = $p->reserve();
    eq('reserve', job($r), [$id1, $body1]);
    step('bury');
    $p->bury($r, 7);
    step('stats-job (buried)');
    fields('stats-job', statsArray($p->statsJob($r)), want());
    step('peek-buried');
    eq('peek-buried', job($p->peekBuried()), [$id1, $body1]);
    step('stats-tube (one buried)');
    fields('stats-tube', statsArray($p->statsTube(TUBE)), want());

    step('put (second job)');
    $body2 = 'second job';
    $id2 = $p->put($body2, 100, 0, 30)->getId();
    eq('second put id', $id2, $id1 + 1);
    step('kick (buried only)');
    eq('kick count with a buried and a ready job', $p->kick(5), 1);
    step('stats-job (kicked from buried)');
    fields('stats-job', statsArray($p->statsJob(new JobId($id1))), want());
    step('stats-tube (two ready)');
    fields('stats-tube', statsArray($p->statsTube(TUBE)), want());

    step('reserve (priority order)');
    $r = $p->reserve();
    eq('reserve takes the most urgent job', job($r), [$id1, $body1]);
    step('delete');
    $p->delete($r);
    step('peek <deleted id>');
    throws('peek of a deleted job', fn () => $p->peek(new JobId($id1)), '/NotFound|NOT_FOUND/');
    step('stats-job <deleted id>');
    throws('stats-job of a deleted job', fn () => $p->statsJob(new JobId($id1)), '/NOT_FOUND/');
    step('delete <deleted id>');
    throws('delete of a deleted job', fn () => $p->delete(new JobId($id1)), '/NotFound|NOT_FOUND/');

    step('reserve (second job)');
    $r = $p->reserve();
    eq('reserve', job($r), [$id2, $body2]);
    step('delete (second job)');
    $p->delete($r);

    step('use other tube');
    $p->useTube(OTHER);
    eq('list-tube-used', $p->listTubeUsed(true), OTHER);
    step('put (other tube)');
    $body3 = 'other tube';
    $id3 = $p->put($body3, 1024, 0, 30)->getId();
    eq('third put id', $id3, $id2 + 1);
    step('reserve-with-timeout 0 (not watching the other tube)');
    eq('reserve-with-timeout 0', $p->reserveWithTimeout(0), null);
    step('watch other tube');
    $p->watch(OTHER);
    eq('list-tubes-watched', $p->listTubesWatched(true), [TUBE, OTHER]);
    step('reserve (from the other tube)');
    $r = $p->reserve();
    eq('reserve', job($r), [$id3, $body3]);
    step('stats-job (other tube)');
    fields('stats-job', statsArray($p->statsJob($r)), ['tube' => OTHER] + want());
    step('delete (other tube)');
    $p->delete($r);
    step('ignore other tube');
    $p->ignore(OTHER);
    step('list-tubes-watched (after ignore)');
    eq('list-tubes-watched', $p->listTubesWatched(true), [TUBE]);

    step('stats-tube (end)');
    fields('stats-tube', statsArray($p->statsTube(TUBE)), want());
    step('stats (end)');
    $s1 = statsArray($p->stats());
    hasKeys('stats', $s1, STATS_KEYS);
    fields('stats', $s1, grown($s0));
}

if ($argc !== 3 || !ctype_digit($argv[2])) {
    fwrite(STDERR, "usage: php {$argv[0]} HOST PORT\n");
    exit(2);
}
if (function_exists('pcntl_alarm')) {
    pcntl_async_signals(true);
    pcntl_signal(SIGALRM, function () {
        global $STEP;
        fwrite(STDERR, CLIENT . ": FAIL at $STEP: no answer within " . LIMIT_SECONDS . " s\n");
        exit(1);
    }, false);
    pcntl_alarm(LIMIT_SECONDS);
}
try {
    scenario($argv[1], (int) $argv[2]);
} catch (Mismatch $e) {
    fwrite(STDERR, CLIENT . ": FAIL at $STEP: " . $e->getMessage() . "\n");
    exit(1);
} catch (\Throwable $e) {
    fwrite(STDERR, CLIENT . ": FAIL at $STEP: unexpected error: " . get_class($e) . ': ' . $e->getMessage() . "\n");
    exit(1);
}
echo CLIENT . ": ok ($CHECKS checks) against {$argv[1]}:{$argv[2]}\n";
exit(0);
