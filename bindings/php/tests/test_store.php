<?php

declare(strict_types=1);

// The binding against one store:
//     php tests/test_store.php URL [DLOCK_CLI_PATH]
// (DLOCK_LIBRARY names libdlock; test.sh runs this for every store.)

require __DIR__ . '/lib.php';

use Dlock\Store;
use Dlock\Lock;

$url = $argv[1] ?? '';
$cli = $argv[2] ?? '';
if ($url === '') {
    fwrite(STDERR, "usage: test_store.php URL [DLOCK_CLI_PATH]\n");
    exit(2);
}
$scheme = preg_match('/^([a-z][a-z0-9+.-]*):/i', $url, $m) ? strtolower($m[1]) : '?';
T::$tag = "[$scheme]";
$isMysql = in_array($scheme, ['mysql', 'mariadb'], true);

$store = new Store($url);
$pass = preg_match('#//[^/@]*:([^/@]+)@#', $url, $m) ? $m[1] : '';
T::ok($pass === '' || !str_contains($store->url(), $pass),
    'store URL is redacted: ' . $store->url());

T::block('lock/release', function () use ($store) {
    $n = T::name('basic');
    $l = $store->lock($n);
    T::ok($l instanceof Lock, 'lock() returns a Lock');
    T::ok($l->name() === $n, 'name() is the name');
    T::ok(!$l->isLost() && $l->isHeld(), 'a fresh lock is held, not lost');
    T::ok($l->leaseLeft() > 25 && $l->leaseLeft() <= 30, 'leaseLeft() about the 30 s default: ' . $l->leaseLeft());
    T::ok($store->status($n)->held, 'status() says held');
    $l->release();
    T::ok(!$l->isHeld() && !$l->isLost(), 'released: not held, not lost');
    T::ok(!$store->status($n)->held, 'status() says free after release');
    T::throws(Dlock\LostException::class, fn () => $l->release(), 'a second release() throws LostException');
    $l2 = $store->lock($n);
    T::ok($l2 !== null, 'free again after release');
    $l2?->release();
});

T::block('busy', function () use ($store) {
    $n = T::name('busy');
    $l = $store->lock($n);
    T::ok($store->lock($n) === null, 'busy: try-once lock() returns null');
    T::ok($store->lock($n, 0) === null, 'busy: wait 0 returns null');
    $t = microtime(true);
    $r = $store->lock($n, 0.3);
    $dt = microtime(true) - $t;
    T::ok($r === null, 'busy: wait 0.3 s returns null');
    T::ok($dt >= 0.25 && $dt < 2.0, sprintf('busy: the wait took 0.3 s (%.3f)', $dt));
    $l->release();
    $t = microtime(true);
    $l = $store->lock($n, 5);
    T::ok($l !== null && microtime(true) - $t < 1.0, 'a wait for a free lock returns at once');
    $l?->release();
});

// docs/library.md's table (issue 47 trap 5): null waits until acquired,
// as Python's None and C's DLOCK_WAIT_FOREVER do (it tried once before);
// 0, the default, tries once.
T::block('wait null', function () use ($store) {
    foreach (['null' => null, 'INF' => INF, 'Store::FOREVER' => Dlock\Store::FOREVER] as $what => $forever) {
        $n = T::name('waitnull');
        $h = $store->lock($n, ttl: 0.3, autoRenew: false);
        $fence = $h->fence();
        T::ok($store->lock($n) === null, "wait $what: the default (0) tries once on a busy lock");
        $t = microtime(true);
        $l = $store->lock($n, $forever);   // the holder's lease runs out
        T::ok($l !== null && $l->fence() > $fence, "wait $what waits until acquired");
        T::ok(microtime(true) - $t < 20, "wait $what: within the lease's end");
        $l?->release();
    }
});

T::block('fences', function () use ($store) {
    $n = T::name('fence');
    $prev = null;
    $rising = true;
    $all = [];
    for ($i = 0; $i < 4; $i++) {
        $l = $store->lock($n);
        $f = $l->fence();
        $all[] = $f;
        $rising = $rising && (is_int($f) || is_string($f)) && ($prev === null || T::fenceGt($f, $prev));
        $prev = $f;
        $st = $store->status($n);
        T::ok((string) $st->fence === (string) $f, "status() fence is the lock's ($f)");
        $l->release();
    }
    T::ok($rising, 'fences rise strictly: ' . implode(' < ', $all));
    T::ok(is_int($all[0]) && $all[0] > 0, 'a fence is a positive int');
});

T::block('shared', function () use ($store, $isMysql) {
    $n = T::name('shared');
    if ($isMysql) {
        T::throws(Dlock\NotSupportedException::class, fn () => $store->lock($n, shared: true), 'shared on MySQL: NotSupportedException');
        return;
    }
    $a = $store->lock($n, shared: true);
    $b = $store->lock($n, shared: true);
    T::ok($a !== null && $b !== null, 'two shared holders at once');
    T::ok($store->lock($n) === null, 'an exclusive lock is busy while shared holders hold');
    $st = $store->status($n);
    T::ok($st->held && $st->shared && $st->holders === 2, "status(): shared, 2 holders ({$st->holders})");
    $a->release();
    T::ok($store->lock($n) === null, 'still busy with one shared holder left');
    $b->release();
    $x = $store->lock($n);
    T::ok($x !== null, 'exclusive once the shared holders left');
    T::ok($store->lock($n, shared: true) === null, 'a shared lock is busy while an exclusive holder holds');
    $x?->release();
});

T::block('semaphore', function () use ($store) {
    $n = T::name('sem');
    $a = $store->lock($n, limit: 2);
    $b = $store->lock($n, limit: 2);
    T::ok($a !== null && $b !== null, 'limit 2: two holders');
    T::ok($store->lock($n, limit: 2) === null, 'limit 2: the third is busy');
    T::ok($a !== null && $b !== null && T::fenceGt($b->fence(), $a->fence()), 'semaphore fences rise across holders');
    $st = $store->status($n);
    T::ok($st->holders === 2 && $st->limit === 2, "status(): 2 holders of limit 2 ({$st->holders}/{$st->limit})");
    T::throws(Dlock\InvalidArgumentException::class, fn () => $store->lock($n, limit: 3), 'another limit while held: InvalidArgumentException');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $store->lock($n, limit: 5000), 'limit over 1024: InvalidArgumentException');
    $a->release();
    $c = $store->lock($n, limit: 2);
    T::ok($c !== null, 'a freed slot is taken');
    $b->release();
    $c?->release();
});

T::block('extend/assertTtl', function () use ($store) {
    $n = T::name('ttl');
    $l = $store->lock($n, ttl: 2);
    T::ok($l->leaseLeft() <= 2.0, 'ttl 2: leaseLeft() <= 2');
    $l->extend(20);
    T::ok($l->leaseLeft() > 10, 'extend(20): leaseLeft() > 10: ' . $l->leaseLeft());
    $l->assertTtl(10);
    T::ok(true, 'assertTtl(10) after extend(20) passes');
    $e = T::throws(Dlock\ExpiringException::class, fn () => $l->assertTtl(60), 'assertTtl(60) with 20 s left: ExpiringException');
    T::ok($e !== null && $e->getCode() === Dlock\Exception::EXPIRING, 'its code is EXPIRING (-3)');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $l->extend(0.01), 'extend(0.01): InvalidArgumentException');
    $l->extend();
    T::ok(!$l->isLost(), 'extend() with the lock\'s own ttl');
    T::ok($store->status($n)->ttl > 10, 'status() ttl follows the extension');
    $l->release();
});

T::block('status/list', function () use ($store) {
    $n1 = T::name('list-a');
    $n2 = T::name('list-b');
    $a = $store->lock($n1);
    $b = $store->lock($n2);
    $st = $store->status($n1);
    T::ok($st->name === $n1 && $st->held && !$st->shared && $st->holders === 1, 'status(): name, held, exclusive, 1 holder');
    T::ok($st->pid === getmypid(), "status(): our pid ({$st->pid})");
    T::ok($st->ttl !== null && $st->ttl > 20 && $st->ttl <= 30.1, "status(): ttl about 30 ({$st->ttl})");
    T::ok($st->since !== null && abs($st->since - microtime(true)) < 60, 'status(): since is about now');
    T::ok($st->host !== '' && !$st->otherClient, "status(): host '{$st->host}', a dlock holder");
    T::ok(is_array($st->toArray()) && $st->toArray()['name'] === $n1, 'toArray()');
    $free = $store->status(T::name('never-taken'));
    T::ok(!$free->held && $free->holders === 0 && $free->ttl === null, 'status() of a free name: not held');
    $names = array_map(fn ($i) => $i->name, $store->list(T::name('list-')));
    sort($names);
    T::ok($names === [$n1, $n2], 'list(prefix) finds exactly the two: ' . implode(',', $names));
    $all = array_map(fn ($i) => $i->name, $store->list());
    T::ok(in_array($n1, $all, true) && in_array($n2, $all, true), 'list() finds them among all');
    T::ok($store->list(T::name('nothing-here-')) === [], 'list() of an unused prefix is empty');
    $a->release();
    $names = array_map(fn ($i) => $i->name, $store->list(T::name('list-')));
    T::ok($names === [$n2], 'list() after a release');
    $b->release();
});

T::block('bad input', function () use ($store, $url) {
    T::throws(Dlock\InvalidArgumentException::class, fn () => $store->lock(''), "empty name: InvalidArgumentException");
    $e = T::throws(Dlock\InvalidArgumentException::class, fn () => $store->lock(str_repeat('x', 1025)), '1025-byte name: InvalidArgumentException');
    T::ok($e !== null && $e->getCode() === Dlock\Exception::EINVAL && $e->getMessage() !== '', 'code EINVAL and a message: ' . ($e ? $e->getMessage() : ''));
    T::throws(Dlock\InvalidArgumentException::class, fn () => $store->lock("a\0b"), 'a NUL in the name: InvalidArgumentException');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $store->lock("\xff\xfe"), 'a name that is not UTF-8: InvalidArgumentException');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $store->lock(T::name('t'), ttl: 0.01), 'ttl 0.01 s: InvalidArgumentException');
    T::throws(Dlock\InvalidArgumentException::class, fn () => $store->status(''), 'status(""): InvalidArgumentException');
    T::throws(Dlock\InvalidArgumentException::class, fn () => new Store('nosuch://x'), 'unknown scheme: InvalidArgumentException');
    $e = T::throws(Dlock\InvalidArgumentException::class, fn () => new Store('mysql://u:topsecret9@127.0.0.1:1/x?bogus=1'), 'bad URL option: InvalidArgumentException');
    T::ok($e !== null && !str_contains($e->getMessage(), 'topsecret9') && str_contains($e->getMessage(), '***'), 'the password is not in the message: ' . ($e ? $e->getMessage() : ''));
    $e = null;
    try {
        $s = new Store('redis://:topsecret9@127.0.0.1:1');
        $s->lock(T::name('unreach'));
    } catch (Dlock\Exception $e) {
    }
    T::ok($e instanceof Dlock\UnavailableException, 'an unreachable store: UnavailableException (' . ($e ? get_class($e) . ': ' . $e->getMessage() : 'none') . ')');
    T::ok($e === null || !str_contains($e->getMessage(), 'topsecret9'), 'no password in that message');
    T::ok(Store::redact('redis://:pw@h:1') === 'redis://:***@h:1', 'Store::redact(): ' . Store::redact('redis://:pw@h:1'));
    $s = new Store($url);
    $s->close();
    T::throws(Dlock\InvalidArgumentException::class, fn () => $s->lock('x'), 'lock() on a closed store: InvalidArgumentException');
});

T::block('store closed under a held lock', function () use ($url) {
    $s = new Store($url);
    $n = T::name('closed');
    $l = $s->lock($n);
    $s->close();
    T::ok($l->isLost(), 'closing the store makes its locks lost');
    T::throws(Dlock\LostException::class, fn () => $l->extend(5), 'extend() then: LostException');
    $s2 = new Store($url);
    $l2 = $s2->lock($n);
    T::ok($l2 !== null, 'the name was released by the close');
    $l2?->release();
});

T::block('LOST', function () use ($store, $url, $cli) {
    $n = T::name('lost');
    $l = $store->lock($n, ttl: 3);
    T::ok(!$l->isLost(), 'held before the break');
    if ($cli !== '') {
        $env = getenv();
        $env['DLOCK_STORE'] = $url;  // not on the command line: ps shows that
        $p = proc_open([$cli, 'release', '--force', $n], [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env);
        $out = stream_get_contents($pipes[1]) . stream_get_contents($pipes[2]);
        $rc = proc_close($p);
        T::ok($rc === 0, "dlock release --force (another process) exits 0 ($rc) " . trim($out));
    } else {
        $c = new Child($url);
        $ans = $c->ask("force $n");
        T::ok($ans === 'removed 1', "a second PHP process broke it ($ans)");
        $c->close();
    }
    // The renewal (every ttl/3 = 1 s, libdlock's thread) finds it gone;
    // at the latest the lease end (3 s) makes it LOST.
    $t = microtime(true);
    while (!$l->isLost() && microtime(true) - $t < 4.0) {
        usleep(20000);
    }
    $dt = microtime(true) - $t;
    T::ok($l->isLost(), sprintf('isLost() within the lease (%.2f s)', $dt));
    T::ok(!$l->isHeld(), 'isHeld() false');
    $e = T::throws(Dlock\LostException::class, fn () => $l->extend(10), 'extend() on a lost lock: LostException');
    T::ok($e !== null && $e->getCode() === Dlock\Exception::LOST, 'code LOST (-2)');
    T::throws(Dlock\LostException::class, fn () => $l->assertTtl(1), 'assertTtl() on a lost lock: LostException');
    T::throws(Dlock\LostException::class, fn () => $l->fence(), 'fence() on a lost lock: LostException');
    T::throws(Dlock\LostException::class, fn () => $l->release(), 'release() of a lost lock: LostException');
    T::ok($l->isLost(), 'still lost after release()');
    $l2 = $store->lock($n);
    T::ok($l2 !== null, 'the name can be taken again');
    $l2?->release();
});

T::block('renewal while PHP is busy', function () use ($store) {
    $n = T::name('renew');
    $l = $store->lock($n, ttl: 0.6);
    $t = microtime(true);
    $x = 0;
    while (microtime(true) - $t < 1.5) {   // busy PHP, no calls into dlock
        $x++;
    }
    T::ok(!$l->isLost(), 'a 0.6 s lease outlives 1.5 s of busy PHP (renewed by libdlock\'s thread)');
    $l->assertTtl(0.1);
    T::ok(true, 'assertTtl() confirms it with the store');
    $l->release();
    $l = $store->lock($n, ttl: 0.5, autoRenew: false);
    $t = microtime(true);
    while (!$l->isLost() && microtime(true) - $t < 2.0) {
        usleep(20000);
    }
    T::ok($l->isLost(), 'without autoRenew a 0.5 s lease is lost after it ends');
    try {
        $l->release();
    } catch (Dlock\LostException $e) {
    }
});

T::block('two PHP processes', function () use ($store, $url) {
    $n = T::name('procs');
    $c = new Child($url);
    $l = $store->lock($n);
    T::ok($c->ask("lock $n") === 'busy', 'the other process finds it busy');
    $c->send("lock $n 20");      // it waits...
    usleep(100000);              // (not a barrier: only gives the wait a chance to start)
    $l->release();               // ...until this release
    $ans = $c->read();
    T::ok(str_starts_with($ans, 'got '), "the waiting process gets it after the release ($ans)");
    T::ok($store->lock($n) === null, 'now this process finds it busy');
    T::ok($c->ask("release $n") === 'released', 'the other process releases');
    $l = $store->lock($n);
    T::ok($l !== null, 'and this one gets it');
    $l?->release();

    // Locks held at exit() are released (destructor / libdlock's atexit).
    T::ok(str_starts_with($c->ask("lock $n"), 'got '), 'the other process takes it again');
    $c->send('exit 3');
    $rc = $c->close();
    T::ok($rc === 3, "it exit()s with the lock held ($rc)");
    $l = $store->lock($n);
    T::ok($l !== null, 'a lock held at exit() is released at once');
    $l?->release();

    $c = new Child($url);
    T::ok(str_starts_with($c->ask("lock $n"), 'got '), 'a third process takes it');
    $rc = $c->close();   // end of input: the script ends normally
    T::ok($rc === 0 && $store->lock($n, 2) !== null, 'released at the end of a script that did not release');
});

T::done();
