<?php

declare(strict_types=1);

// Election through the PHP binding (issue 45), against one store:
//     php tests/test_elect.php URL
// Two candidates are two Store objects, or this process and
// tests/child.php.  (DLOCK_LIBRARY names libdlock; test.sh runs this for
// every store.)

require __DIR__ . '/lib.php';

use Dlock\Exception;
use Dlock\InvalidArgumentException;
use Dlock\Leader;
use Dlock\Lock;
use Dlock\Store;

$url = $argv[1] ?? '';
if ($url === '') {
    fwrite(STDERR, "usage: test_elect.php URL\n");
    exit(2);
}
$scheme = preg_match('/^([a-z][a-z0-9+.-]*):/i', $url, $m) ? strtolower($m[1]) : '?';
T::$tag = "[$scheme elect]";
$store = new Store($url);
$store2 = new Store($url);

// Every store has election: NotSupported is a failure.
try {
    $probe = $store->elect(T::name('probe'));
    $probe?->release();
} catch (Dlock\NotSupportedException $e) {
    T::ok(false, "the $scheme store has election", $e->getMessage());
    T::done();
}

T::block('one leader between two candidates', function () use ($store, $store2) {
    $n = T::name('one');
    $a = $store->elect($n, 'a');
    T::ok($a instanceof Lock && $a->isHeld() && $a->fence() > 0, 'elect() returns a held Lock with a term: ' . ($a?->fence() ?? 'null'));
    T::ok($a->value() === 'a', 'value() is the value given');
    T::ok($store2->elect($n, 'b') === null, 'a second candidate does not lead (null, as a busy lock)');
    T::ok($store2->lock($n) === null, 'leadership is the lock: lock() of the name is busy too');
    $l = $store2->leader($n);
    T::ok($l instanceof Leader && $l->name === $n && $l->value === 'a', 'leader() reads the value: ' . ($l?->value ?? 'null'));
    T::ok($l !== null && (string) $l->fence === (string) $a->fence(), "leader()'s fence is the term");
    if (str_starts_with(T::$tag, '[etcd')) {
        // The key holds the value alone, as etcdctl elect writes it.
        T::ok($l !== null && $l->pid === null && $l->host === '' && $l->since === null, 'etcd: no host, pid or since on the key: ' . json_encode([$l?->pid, $l?->host, $l?->since]));
    } else {
        T::ok($l !== null && $l->pid === getmypid() && $l->host !== '', 'leader() names the host and pid');
        T::ok($l !== null && $l->since !== null && abs($l->since - time()) < 600, 'leader() says since when');
    }
    T::ok($l !== null && $l->toArray()['value'] === 'a', 'toArray()');
    $fa = $a->fence();
    $a->release();
    T::ok($store2->leader($n) === null, 'resigned: leader() is null');
    $b = $store2->elect($n, 'b');
    T::ok($b !== null && T::fenceGt($b->fence(), $fa), 'the other candidate leads with a greater term');
    T::ok($store->leader($n)?->value === 'b', 'and its value is read');
    $b?->release();
});

T::block('a waiting candidate takes over', function () use ($store, $url) {
    $n = T::name('wait');
    $c = new Child($url);
    $said = $c->ask("elect $n a");
    T::ok(str_starts_with($said, 'leading '), "the other process leads: $said");
    $first = (int) substr($said, 8);
    $t = microtime(true);
    T::ok($store->elect($n, 'b', 0.3) === null, 'a candidate not leading within $wait gets null');
    $dt = microtime(true) - $t;
    T::ok($dt >= 0.25 && $dt < 5, sprintf('after the wait (%.3f s)', $dt));
    $c->send("release $n");
    $b = $store->elect($n, 'b', 20);
    T::ok($b !== null && T::fenceGt($b->fence(), $first), 'the waiting candidate leads once the leader resigns, with a greater term: ' . ($b?->fence() ?? 'null') . " > $first");
    T::ok($c->read() === 'released', 'the other one resigned');
    $b?->release();
    T::ok($c->close() === 0, 'the child exits 0');
});

T::block('terms rise', function () use ($store) {
    $n = T::name('terms');
    $terms = [];
    $rising = true;
    for ($i = 0; $i < 4; $i++) {
        $l = $store->elect($n, "v$i");
        $f = $l->fence();
        $rising = $rising && ($terms === [] || T::fenceGt($f, end($terms)));
        $terms[] = $f;
        $l->release();
    }
    T::ok($rising, 'each term greater than the last: ' . implode(' < ', $terms));
});

T::block('proclaim', function () use ($store, $store2) {
    $n = T::name('proclaim');
    $a = $store->elect($n, 'first');
    $a->proclaim('second');
    T::ok($store2->leader($n)?->value === 'second' && $a->value() === 'second', 'proclaim() changes the value leader() reads');
    $a->proclaim("\u{e9}t\u{e9}");
    T::ok($store2->leader($n)?->value === "\u{e9}t\u{e9}", 'UTF-8 values');
    $a->proclaim(null);
    T::ok($store2->leader($n)?->value === null && $store2->leader($n) !== null, 'proclaim(null): a leader without a value');
    $big = str_repeat('x', 4096);
    $a->proclaim($big);
    T::ok($store2->leader($n)?->value === $big, '4096 bytes');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $a->proclaim("a\0b"), 'a NUL byte: InvalidArgumentException');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $a->proclaim(str_repeat('x', 4097)), '4097 bytes: InvalidArgumentException');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $a->proclaim("\xff\xfe"), 'not UTF-8: InvalidArgumentException');
    T::ok($store2->leader($n)?->value === $big && $a->value() === $big, 'a refused value changes nothing');
    $l = $store->lock(T::name('plain'));
    T::throws(Dlock\InvalidArgumentException::class, fn () => $l->proclaim('x'), 'proclaim() on a lock not from elect(): InvalidArgumentException');
    $l->release();
    T::throws(Dlock\InvalidArgumentException::class, fn () => $store->elect(T::name('nul'), "a\0b"), 'elect() with a NUL in the value: InvalidArgumentException');
    $a->release();
    T::throws(Dlock\LostException::class, fn () => $a->proclaim('late'), 'proclaim() after resigning: LostException');
});

T::block('proclaim after loss', function () use ($store, $store2) {
    $n = T::name('lost');
    $a = $store->elect($n, 'a');
    T::ok($store2->forceRelease($n) === 1, 'the leader is broken');
    $e = T::throws(Dlock\LostException::class, fn () => $a->proclaim('deposed'), 'proclaim() after the loss: LostException');
    T::ok($e !== null && $e->getCode() === Exception::LOST, 'with the code LOST');
    T::ok($store2->leader($n) === null, 'nothing was written: no leader');
    $b = $store2->elect($n, 'b');
    T::throws(Dlock\LostException::class, fn () => $a->proclaim('deposed again'), "a deposed leader's proclaim() under its successor: LostException");
    $l = $store->leader($n);
    T::ok($l?->value === 'b' && (string) $l->fence === (string) $b->fence(), "the successor's value stands");
    T::throws(Dlock\LostException::class, fn () => $a->release(), 'release() of the deposed one: LostException');
    $b->release();
});

T::block('observe', function () use ($store, $url) {
    $n = T::name('observe');
    $c = new Child($url);
    $said = $c->ask("elect $n a");
    T::ok(str_starts_with($said, 'leading '), "the other process leads: $said");
    $seen = [];
    $t0 = $latency = $stopped = 0.0;
    $store->observe($n, function (?Leader $l) use ($c, $n, &$seen, &$t0, &$latency, &$stopped) {
        $seen[] = $l?->value;
        switch (count($seen)) {
            case 1:
                $t0 = microtime(true);
                $c->send("proclaim $n a2");  // answered later: the pipe keeps it
                return true;
            case 2:
                $latency = microtime(true) - $t0;
                $c->send("release $n");
                return null;                  // anything but false goes on
            default:
                $stopped = microtime(true);
                return false;
        }
    });
    $back = microtime(true) - $stopped;
    T::ok($seen === ['a', 'a2', null], 'each change seen, from the store: ' . json_encode($seen));
    T::ok($latency > 0 && $latency < 10, sprintf('the proclaim was seen after %.3f s', $latency));
    T::ok($back < 0.5, sprintf('returning false stops it at once (%.3f s)', $back));
    T::ok($c->read() === 'proclaimed' && $c->read() === 'released', 'the other process proclaimed, then resigned');
    T::ok($c->close() === 0, 'the child exits 0');

    $l = $store->elect($n, 'mine');
    $e = new RuntimeException('from the callback');
    try {
        $store->observe($n, function (?Leader $l) use ($e) {
            throw $e;
        });
        T::ok(false, "the callback's exception propagates", 'observe() returned');
    } catch (RuntimeException $got) {
        T::ok($got === $e, "the callback's exception propagates");
    }
    $l->release();
    echo sprintf("# %s a proclaim seen by observe() after %.3f s\n", T::$tag, $latency);
});

// adv45b: close() inside observe()'s callback freed the handle that
// dlock_observe() was still using (a segfault); it throws instead.
T::block('adv45b: close() inside the callback', function () use ($url) {
    $n = T::name('adv45b-close');
    $s = new Store($url);
    $l = $s->elect($n, 'a');
    try {
        $s->observe($n, function (?Leader $l) use ($s) {
            $s->close();
            return true;
        });
        T::ok(false, 'close() inside the callback throws', 'observe() returned');
    } catch (InvalidArgumentException $e) {
        T::ok(str_contains($e->getMessage(), "inside observe()'s callback"), 'close() inside the callback throws: ' . $e->getMessage());
    }
    $l->release();
    $s->close();
    try {
        $s->url();
        T::ok(false, 'the store closes afterwards', 'url() answered');
    } catch (InvalidArgumentException $e) {
        T::ok(true, 'the store closes afterwards');
    }
});

T::done();
