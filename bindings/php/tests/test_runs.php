<?php

declare(strict_types=1);

// Run records through the PHP binding, against one store:
//     php tests/test_runs.php URL
// (DLOCK_LIBRARY names libdlock; test.sh runs this for every store.)

require __DIR__ . '/lib.php';

use Dlock\Run;
use Dlock\RunOutcome;
use Dlock\Store;

$url = $argv[1] ?? '';
if ($url === '') {
    fwrite(STDERR, "usage: test_runs.php URL\n");
    exit(2);
}
$scheme = preg_match('/^([a-z][a-z0-9+.-]*):/i', $url, $m) ? strtolower($m[1]) : '?';
T::$tag = "[$scheme runs]";
$store = new Store($url);

/** Take $n, begin a run by rule, end it with $status if it goes: [go, last, fence]. */
function oneRun(Store $store, string $n, int $status = 0, bool $once = false, ?float $oncePer = null): array
{
    $l = $store->lock($n, 10);
    [$go, $last] = $l->runBegin($once, $oncePer);
    if ($go) {
        $l->runEnd(Run::EXITED, $status);
    }
    $f = $l->fence();
    $l->release();
    return [$go, $last, $f];
}

T::block('begin/end/history', function () use ($store) {
    $n = T::name('run-basic');
    $l = $store->lock($n);
    [$go, $last] = $l->runBegin();
    T::ok($go === true && $last === null, 'the first run goes, with no run before it');
    $running = $store->history($n);
    T::ok(count($running) === 1 && $running[0]->result === Run::RUNNING && $running[0]->end === null,
        'history shows it running');
    $l->runEnd(Run::EXITED, 0);
    $f = $l->fence();
    $l->release();
    $h = $store->history($n);
    T::ok(count($h) === 1 && $h[0] instanceof Run, 'history has one Run');
    $r = $h[0];
    T::ok($r->name === $n && (string) $r->fence === (string) $f, "the run is the lock's (fence $f)");
    T::ok($r->pid === getmypid() && $r->host !== '', "host and pid are this process's ({$r->host} {$r->pid})");
    T::ok($r->succeeded() && $r->resultName() === 'exited' && $r->status === 0, 'it exited 0');
    T::ok($r->start > 0 && $r->end !== null && $r->end >= $r->start, 'start <= end');
    T::ok($r->toArray()['resultName'] === 'exited', 'toArray() has the fields');
    T::ok($store->history($n . '/none') === [], 'a name without runs: an empty history');
});

T::block('once', function () use ($store) {
    $n = T::name('run-once');
    [$go, , $f1] = oneRun($store, $n, 3, true);
    T::ok($go, 'once: a first run goes (and fails with 3)');
    [$go, $last, $f2] = oneRun($store, $n, 0, true);
    T::ok($go && $last !== null && (string) $last->fence === (string) $f1 && $last->status === 3,
        'once: after a failure the next run goes; last is the failed run');
    [$go, $last] = oneRun($store, $n, 0, true);
    T::ok(!$go && $last !== null && (string) $last->fence === (string) $f2 && $last->succeeded(),
        'once: after a success the next run skips; last is the success');
    T::ok(count($store->history($n)) === 2, 'a skip records nothing');
});

T::block('once per period', function () use ($store) {
    $n = T::name('run-per');
    [$go, , $f1] = oneRun($store, $n, 0, false, 3600.0);
    T::ok($go, 'once-per: the first run of the period goes');
    [$go, $last] = oneRun($store, $n, 0, false, 3600.0);
    T::ok(!$go && (string) $last->fence === (string) $f1, 'once-per: a second run in the period skips');
    [$go] = oneRun($store, $n . '/other', 0, false, 3600.0);
    T::ok($go, 'once-per: another name has its own period');
});

T::block('history bound, max, lastRuns', function () use ($store) {
    $n = T::name('run-hist');
    $fences = [];
    for ($i = 0; $i < Run::KEPT + 2; $i++) {
        $fences[] = (string) oneRun($store, $n)[2];
    }
    $want = array_slice(array_reverse($fences), 0, Run::KEPT);
    $got = array_map(fn (Run $r) => (string) $r->fence, $store->history($n));
    T::ok($got === $want, 'history keeps the newest ' . Run::KEPT . ', newest first');
    $got = array_map(fn (Run $r) => (string) $r->fence, $store->history($n, 2));
    T::ok($got === array_slice($want, 0, 2), 'history($n, 2): the newest two');
    oneRun($store, $n . '-b', 5);
    $last = [];
    foreach ($store->lastRuns($n) as $r) {
        $last[$r->name] = $r;
    }
    T::ok(array_keys($last) == [$n, $n . '-b'] || array_keys($last) == [$n . '-b', $n],
        'lastRuns(prefix): one run per name: ' . implode(', ', array_keys($last)));
    T::ok(isset($last[$n]) && (string) $last[$n]->fence === $want[0], 'lastRuns: the newest run of the name');
    T::ok(isset($last[$n . '-b']) && $last[$n . '-b']->status === 5, 'lastRuns: the other name, exit 5');
    $all = array_map(fn (Run $r) => $r->name, $store->lastRuns());
    T::ok(in_array($n, $all, true), 'lastRuns() without a prefix includes it');
});

T::block('lost run', function () use ($store) {
    $n = T::name('run-lost');
    $l = $store->lock($n);
    [$go] = $l->runBegin();
    T::ok($go, 'a run began');
    $store->forceRelease($n);
    T::throws(Dlock\LostException::class, fn () => $l->assertTtl(0), 'broken: assertTtl() throws LostException');
    $l->runEnd(Run::LOST, -1);
    T::ok(true, 'runEnd() on the lost lock records the end');
    T::throws(Dlock\LostException::class, fn () => $l->release(), 'release() throws LostException');
    $r = $store->history($n)[0] ?? null;
    T::ok($r !== null && $r->result === Run::LOST && $r->resultName() === 'lost' && $r->end !== null,
        'history: the run is LOST');
    $l = $store->lock($n);
    $store->forceRelease($n);
    T::throws(Dlock\LostException::class, fn () => $l->runBegin(), 'runBegin() on a lost lock throws LostException');
    try {
        $l->release();
    } catch (Dlock\LostException $e) {
    }
    T::ok(count($store->history($n)) === 1, 'and records nothing');
});

T::block('signaled, result names', function () use ($store) {
    $n = T::name('run-sig');
    $l = $store->lock($n);
    $l->runBegin();
    $l->runEnd('signaled', 15);
    $l->release();
    $r = $store->history($n)[0];
    T::ok($r->result === Run::SIGNALED && $r->status === 15, 'runEnd("signaled", 15) is recorded');
});

T::block('runOnce', function () use ($store) {
    $n = T::name('run-conv');
    $calls = 0;
    // (A closure, not fn (): an arrow function would count in a copy.)
    T::throws(\RuntimeException::class, function () use ($store, $n, &$calls) {
        $store->runOnce($n, function () use (&$calls) {
            $calls++;
            throw new \RuntimeException('migration failed');
        }, once: true);
    }, 'runOnce: the job\'s exception propagates');
    $r = $store->history($n)[0] ?? null;
    T::ok($r !== null && $r->result === Run::EXITED && $r->status === 1, 'a job that threw is recorded as status 1');
    T::ok(!$store->status($n)->held, 'and the lock is released');
    $out = $store->runOnce($n, function () use (&$calls) {
        $calls++;
        return 'migrated';
    }, once: true);
    T::ok($out instanceof RunOutcome && $out->ran && $out->value === 'migrated' && $out->last?->status === 1,
        'after a failure runOnce runs the job again and returns its value');
    $out = $store->runOnce($n, function () use (&$calls) {
        $calls++;
    }, once: true);
    T::ok(!$out->ran && !$out->busy && $out->last?->succeeded(), 'after a success runOnce skips');
    T::ok($calls === 2, "the job ran twice in all ($calls): the failure and the success");
    $held = $store->lock($n);
    $out = $store->runOnce($n, fn () => 1, wait: 0);
    T::ok(!$out->ran && $out->busy, 'runOnce with wait 0 on a held lock: busy, not run');
    $held->release();
});

T::block('argument errors', function () use ($store) {
    $n = T::name('run-args');
    $l = $store->lock($n);
    T::throws(Dlock\InvalidArgumentException::class, fn () => $l->runBegin(false, -1.0), 'oncePer < 0');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $l->runBegin(false, 366 * 86400.0), 'oncePer over 365 days');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $l->runEnd(Run::EXITED, 0), 'runEnd() before runBegin()');
    $l->runBegin();
    T::throws(Dlock\InvalidArgumentException::class, fn () => $l->runEnd(Run::RUNNING, 0), 'runEnd(RUNNING)');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $l->runEnd('finished', 0), 'runEnd("finished")');
    $l->runEnd();
    $l->release();
    T::throws(Dlock\LostException::class, fn () => $l->runBegin(), 'runBegin() after release()');
    T::throws(Dlock\LostException::class, fn () => $l->runEnd(), 'runEnd() after release()');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $store->history(''), 'history("")');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $store->history("a\0b"), 'history() of a name with NUL');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $store->history($n, -1), 'history() with max -1');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $store->lastRuns(str_repeat('x', 1025)), 'lastRuns() of a prefix too long');
});

T::done();
