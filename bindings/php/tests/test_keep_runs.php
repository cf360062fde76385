<?php

declare(strict_types=1);

// How many runs a name keeps, through the PHP binding, against one store:
//     php tests/test_keep_runs.php URL
// (DLOCK_LIBRARY names libdlock; test.sh runs this for every store.)

require __DIR__ . '/lib.php';

use Dlock\Run;
use Dlock\Store;

$url = $argv[1] ?? '';
if ($url === '') {
    fwrite(STDERR, "usage: test_keep_runs.php URL\n");
    exit(2);
}
$scheme = preg_match('/^([a-z][a-z0-9+.-]*):/i', $url, $m) ? strtolower($m[1]) : '?';
T::$tag = "[$scheme keep-runs]";
$store = new Store($url);

/** A run of $n that goes ahead and exits 0: its fence, as a string. */
function oneRun(Store $store, string $n): string
{
    $l = $store->lock($n, 10);
    [$go] = $l->runBegin();
    if ($go) {
        $l->runEnd(Run::EXITED, 0);
    }
    $f = (string) $l->fence();
    $l->release();
    return $go ? $f : "no run ($f)";
}

/** @param Run[] $runs */
function fences(array $runs): array
{
    return array_map(fn (Run $r) => (string) $r->fence, $runs);
}

// The argument checks first: the library checks n before it asks the
// store, and the binding what an unsigned would wrap, so they hold on
// every store, whether it can keep a setting or not.
T::block('argument errors', function () use ($store) {
    $n = T::name('keep-args');
    $bad = Dlock\InvalidArgumentException::class;
    foreach ([-1, Run::KEPT_MAX + 1, 0xFFFFFFFF, 0x100000000, PHP_INT_MAX, PHP_INT_MIN] as $k) {
        $e = T::throws($bad, fn () => $store->keepRuns($n, $k), "keepRuns(\$n, $k)");
        T::ok($e !== null && $e->getCode() === Dlock\Exception::EINVAL
            && str_contains($e->getMessage(), '1..' . Run::KEPT_MAX), '  is EINVAL, naming the range', $e?->getMessage() ?? '');
    }
    T::throws(\TypeError::class, fn () => $store->keepRuns($n, '3'), "keepRuns(\$n, '3') (strict types)");
    foreach (['' => '""', "a\0b" => 'a NUL', str_repeat('x', 1025) => 'too long'] as $name => $what) {
        T::throws($bad, fn () => $store->keepRuns($name, 3), "keepRuns() of a name $what");
        T::throws($bad, fn () => $store->keptRuns($name), "keptRuns() of a name $what");
    }
});

// KEEP-RUNS-ENOTSUP: only SQLite implements dlock_keep_runs() so far (the
// network stores answer DLOCK_ENOTSUP until their branches land).  The
// library is asked once: NotSupportedException skips the rest of this
// script with its message on those stores, so it runs for real as each
// store lands; on SQLite it fails.  Remove this once every store
// implements it.
try {
    $store->keepRuns(T::name('keep-probe'), 0);
} catch (Dlock\NotSupportedException $e) {
    if ($scheme === 'sqlite') {
        T::ok(false, 'SQLite keeps a setting', $e->getMessage());
        T::done();
    }
    echo "skip " . T::$tag . " $scheme store: no keepRuns yet ({$e->getMessage()})\n";
    T::done();
}

T::block('keep 3, history, another handle, fewer, 0', function () use ($store, $url) {
    $n = T::name('keep3');
    T::ok($store->keptRuns($n) === Run::KEPT, 'a name never set keeps Run::KEPT (' . Run::KEPT . ')');
    $store->keepRuns($n, 3);
    T::ok($store->keptRuns($n) === 3, 'keepRuns($n, 3): keptRuns() is 3');
    $made = [];
    for ($i = 0; $i < 5; $i++) {
        $made[] = oneRun($store, $n);
    }
    $newest = array_reverse($made);
    T::ok(fences($store->history($n)) === array_slice($newest, 0, 3), 'after 5 runs history has the 3 newest, newest first',
        implode(' ', fences($store->history($n))));
    $other = new Store($url);
    T::ok($other->keptRuns($n) === 3, 'another Store reads 3: the setting is the store\'s');
    T::ok(fences($other->history($n)) === array_slice($newest, 0, 3), 'and the same history');
    T::ok($other->keptRuns("$n/other") === Run::KEPT, 'another name keeps its own (the default)');

    $store->keepRuns($n, 2);
    T::ok(fences($store->history($n)) === array_slice($newest, 0, 2), 'keepRuns($n, 2): the oldest goes at once');

    $store->keepRuns($n);
    T::ok($store->keptRuns($n) === Run::KEPT && $other->keptRuns($n) === Run::KEPT, 'keepRuns($n) (0): Run::KEPT again');
    array_unshift($newest, oneRun($store, $n));
    T::ok(fences($store->history($n)) === array_slice($newest, 0, 3),
        'the runs dropped do not come back; a new one is kept beside the two');
    try {
        $store->keepRuns($n, Run::KEPT_MAX);
        T::ok($store->keptRuns($n) === Run::KEPT_MAX, 'Run::KEPT_MAX (' . Run::KEPT_MAX . ') is taken');
    } catch (Dlock\InvalidArgumentException $e) {
        // A store that keeps fewer at most says so (etcd: 500, its runs
        // share one key); its most is taken.
        T::ok(str_contains($e->getMessage(), '1..500'), 'a store that keeps fewer says its most', $e->getMessage());
        $store->keepRuns($n, 500);
        T::ok($store->keptRuns($n) === 500, 'and 500 is taken');
    }
    $other->close();
});

T::block('history($n, 0) is every run kept', function () use ($store) {
    $n = T::name('keep-all');
    $store->keepRuns($n, Run::KEPT + 5);
    $made = [];
    for ($i = 0; $i < Run::KEPT + 3; $i++) {
        $made[] = oneRun($store, $n);
    }
    T::ok(fences($store->history($n)) === array_reverse($made), 'history() has all ' . (Run::KEPT + 3) . ', past Run::KEPT');
    T::ok(fences($store->history($n, 4)) === array_slice(array_reverse($made), 0, 4), 'history($n, 4): the newest four');
});

T::block('refused calls set nothing', function () use ($store) {
    $n = T::name('keep-args');
    T::ok($store->keptRuns($n) === Run::KEPT, 'the name of the refused calls keeps the default');
});

T::done();
