<?php

declare(strict_types=1);

// Suspension through the PHP binding, against one store:
//     php tests/test_suspend.php URL
// (DLOCK_LIBRARY names libdlock; test.sh runs this for every store.)

require __DIR__ . '/lib.php';

use Dlock\Run;
use Dlock\Store;
use Dlock\Suspension;

$url = $argv[1] ?? '';
if ($url === '') {
    fwrite(STDERR, "usage: test_suspend.php URL\n");
    exit(2);
}
$scheme = preg_match('/^([a-z][a-z0-9+.-]*):/i', $url, $m) ? strtolower($m[1]) : '?';
T::$tag = "[$scheme suspend]";
$store = new Store($url);

// SUSPENSION-ENOTSUP: only SQLite implements suspension so far (the
// network stores answer DLOCK_ENOTSUP until their branches land).  The
// library is asked once: NotSupportedException skips this script with its
// message on those stores, so it runs for real as each store lands; on
// SQLite it fails.  Remove this once every store implements it.
$probe = T::name('suspend-probe');
try {
    $store->suspend($probe);
    $store->resume($probe);
} catch (Dlock\NotSupportedException $e) {
    if ($scheme === 'sqlite') {
        T::ok(false, 'SQLite suspends', $e->getMessage());
        T::done();
    }
    echo "skip " . T::$tag . " $scheme store: no suspension yet ({$e->getMessage()})\n";
    T::done();
}

T::block('suspend, skip, list, resume, run', function () use ($store) {
    $n = T::name('susp');
    $before = microtime(true);
    T::ok($store->suspend($n, 'disk full on db-2', 'ops@bastion') === false, 'suspend() of a name not suspended: false');
    T::ok($store->suspend($n, 'another reason') === true, 'a second suspend(): true, it was already');
    $s = $store->suspended($n);
    T::ok($s instanceof Suspension, 'suspended() returns a Suspension');
    T::ok($s->name === $n && $s->by === 'ops@bastion' && $s->reason === 'disk full on db-2',
        "by and reason are the first suspend()'s ({$s->by}: {$s->reason})");
    T::ok($s->since >= $before - 120 && $s->since <= microtime(true) + 120, "since is about now ({$s->since})");
    T::ok($s->toArray() === ['name' => $n, 'by' => 'ops@bastion', 'since' => $s->since, 'reason' => 'disk full on db-2'],
        'toArray() has the fields');

    $l = $store->lock($n, 10);
    [$go, $last] = $l->runBegin();
    T::ok($go === false && $last instanceof Run, 'runBegin() of a suspended name skips, with a Run');
    T::ok($last->result === Run::SUSPENDED && $last->resultName() === 'suspended' && !$last->succeeded(),
        'the Run is SUSPENDED ("suspended")');
    T::ok($last->name === $n && $last->host === $s->by && $last->start === $s->since,
        'its host is who suspended it, its start since when');
    T::ok((string) $last->fence === '0' && $last->pid === 0 && $last->end === null && $last->status === -1,
        'fence and pid 0, no end, status -1');
    [$go, $last] = $l->runBegin(false, 3600.0);
    T::ok(!$go && $last->result === Run::SUSPENDED, 'whatever the rule (oncePer)');
    $l->release();
    $calls = 0;
    $out = $store->runOnce($n, function () use (&$calls) {
        $calls++;
    }, wait: 10);
    T::ok(!$out->ran && !$out->busy && $calls === 0 && $out->last?->result === Run::SUSPENDED,
        'runOnce() does not run the job');
    T::ok($store->history($n) === [], 'a skip records no run');

    T::ok($store->suspend("$n/sub", '') === false, 'another name under it suspended, no reason');
    $names = fn (array $list) => array_map(fn (Suspension $x) => $x->name, $list);
    T::ok($names($store->suspensions("$n/")) === ["$n/sub"], 'suspensions(prefix): only what is under the prefix');
    $both = $store->suspensions($n);
    $byName = [];
    foreach ($both as $x) {
        $byName[$x->name] = $x;
    }
    T::ok(count($both) === 2 && isset($byName[$n], $byName["$n/sub"]), 'suspensions(): both: ' . implode(', ', $names($both)));
    T::ok(isset($byName[$n]) && $byName[$n] == $s, 'the listed one is what suspended() said');
    T::ok(in_array($n, $names($store->suspensions()), true), 'suspensions() without a prefix includes it');

    $r = $store->resume($n);
    T::ok($r instanceof Suspension && $r == $s, 'resume() returns the suspension it lifted');
    T::ok($store->suspended($n) === null, 'then suspended() is null');
    T::ok($store->resume($n) === null, 'a second resume(): null');
    T::ok($names($store->suspensions($n)) === ["$n/sub"], 'the other is still suspended');
    T::ok($store->resume("$n/sub")?->reason === '', "its reason is ''");

    $l = $store->lock($n, 10);
    [$go, $last] = $l->runBegin();
    T::ok($go === true && $last === null, 'after resume() a run goes ahead');
    $l->runEnd(Run::EXITED, 0);
    $l->release();
    T::ok(count($store->history($n)) === 1, 'and is recorded');
});

T::block('default by, no reason', function () use ($store) {
    $n = T::name('susp-default');
    $store->suspend($n);
    $s = $store->suspended($n);
    T::ok($s !== null && str_contains($s->by, '@') && $s->reason === '', "by defaults to USER@HOST ({$s?->by})");
    $store->resume($n);
    T::ok($store->suspended(T::name('susp-never')) === null && $store->suspensions(T::name('susp-never')) === [],
        'a name never suspended: null, none listed');
});

T::block('argument errors', function () use ($store) {
    $n = T::name('susp-args');
    $bad = Dlock\InvalidArgumentException::class;
    foreach (['a newline' => "two\nlines", 'over 1024 bytes' => str_repeat('x', Suspension::REASON_MAX + 1),
              'an escape' => "\e[31mred", 'a NUL' => "a\0b"] as $what => $reason) {
        $e = T::throws($bad, fn () => $store->suspend($n, $reason), "a reason with $what");
        T::ok($e !== null && $e->getCode() === Dlock\Exception::EINVAL, "  is EINVAL");
    }
    T::throws($bad, fn () => $store->suspend($n, null, ''), 'by ""');
    T::throws($bad, fn () => $store->suspend($n, null, "a\nb"), 'by with a newline');
    T::throws($bad, fn () => $store->suspend($n, null, str_repeat('x', 256)), 'by over 255 bytes');
    T::throws($bad, fn () => $store->suspend(''), 'suspend("")');
    T::throws($bad, fn () => $store->suspended(str_repeat('x', 1025)), 'suspended() of a name too long');
    T::throws($bad, fn () => $store->resume("a\0b"), 'resume() of a name with NUL');
    T::throws($bad, fn () => $store->suspensions(str_repeat('x', 1025)), 'suspensions() of a prefix too long');
    T::ok($store->suspended($n) === null, 'nothing was suspended by the calls refused');
    $longest = str_repeat("\u{e9}", Suspension::REASON_MAX / 2);
    T::ok($store->suspend($n, $longest) === false && $store->resume($n)?->reason === $longest,
        'a reason of 1024 bytes (UTF-8) is taken');
});

T::done();
