<?php

declare(strict_types=1);

// Dlock\Compat\SharedLock, the drop-in for its-mieger/mysql-shared-locks,
// on a MySQL/MariaDB store:
//     php tests/test_compat.php mysql://user:pw@127.0.0.1:3306/db
//
// "seed" below is a raw client playing its-mieger/mysql-shared-locks: the
// statements that library sends (shared/reference/README.md), word for
// word, over the `mysql` command-line client (PHP's pdo_mysql/mysqli are
// not needed).  Run twice: on the default `shared_locks` table, and on a
// table made with the seed's own DDL (MyISAM, latin1) through ?table=.

require __DIR__ . '/lib.php';

use Dlock\Compat\SharedLock;
use Dlock\Compat\SharedLockHandle;
use Dlock\Compat\Exception\SharedLockAcquireException;
use Dlock\Compat\Exception\SharedLockException;
use Dlock\Compat\Exception\SharedLockReleaseException;
use Dlock\Compat\Exception\SharedLockRemainingTTLException;
use Dlock\Compat\Exception\SharedLockTimeoutException;

/** One MySQL session of the seed library, through `mysql --batch`. */
final class Seed
{
    private $proc = null;
    private array $pipes = [];
    public function __construct(private string $url, private string $table)
    {
        $u = parse_url($url);
        $q = [];
        parse_str($u['query'] ?? '', $q);
        $cmd = ['mysql', '--batch', '--skip-column-names', '--unbuffered', '--force', '--default-character-set=utf8mb4',
            '-u', rawurldecode($u['user'] ?? ''), ];
        if (isset($q['socket'])) {
            $cmd[] = '--socket=' . $q['socket'];
        } else {
            array_push($cmd, '--protocol=TCP', '-h', $u['host'] ?? '127.0.0.1', '-P', (string) ($u['port'] ?? 3306));
        }
        $cmd[] = rawurldecode(ltrim($u['path'] ?? '', '/'));
        $env = getenv();
        $env['MYSQL_PWD'] = rawurldecode($u['pass'] ?? '');   // not on the command line
        $this->proc = proc_open($cmd, [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['redirect', 1]], $this->pipes, null, $env);
        if (!is_resource($this->proc)) {
            throw new RuntimeException('cannot run the mysql client');
        }
    }

    /** Lines sent to the client so far (its errors say "at line N"). */
    private int $lines = 0;

    /** Run statements; the output lines (errors included: "ERROR 1062 ..."). */
    public function q(string $sql): array
    {
        fwrite($this->pipes[0], "$sql;\nSELECT '--end--';\n");
        fflush($this->pipes[0]);
        // The end marker's own line: if the session is gone (KILLed), the
        // marker fails too ("ERROR 2006 ... at line N") and never prints,
        // and that error is the end instead of waiting out the deadline.
        $this->lines += substr_count($sql, "\n") + 2;
        $markerError = '/^ERROR [0-9]+ \([0-9A-Z]+\) at line ' . $this->lines . ':/';
        $out = [];
        $t = microtime(true);
        while (microtime(true) - $t < 30) {
            $r = [$this->pipes[1]];
            $w = $e = null;
            if (stream_select($r, $w, $e, 1) < 1) {
                continue;
            }
            $line = fgets($this->pipes[1]);
            if ($line === false) {
                $out[] = 'EOF';
                return $out;
            }
            $line = rtrim($line, "\n");
            if ($line === '--end--') {
                return $out;
            }
            $out[] = $line;
            if (preg_match($markerError, $line)) {
                return $out;
            }
        }
        $out[] = 'TIMEOUT';
        return $out;
    }

    public function lit(string $s): string
    {
        return "'" . addcslashes($s, "'\\") . "'";
    }

    private function t(): string
    {
        return '`' . $this->table . '`';
    }

    /** its-mieger's getLock(): register, GET_LOCK(name, 0), mark. */
    public function lock(string $n, int $ttl, ?array &$trace = null): bool
    {
        $trace = [];
        $ins = $this->q('INSERT INTO ' . $this->t() . ' (`name`,`created`,`ttl`,`connection_id`,`lock_acquired`) VALUES ('
            . $this->lit($n) . ", unix_timestamp(), $ttl, connection_id(), false)");
        if ($ins !== []) {
            $trace['insert'] = implode(' ', $ins);
            // its clean-up of obsolete rows after a failed register
            $del = $this->q('DELETE FROM ' . $this->t() . ' WHERE name=' . $this->lit($n)
                . ' AND (`created`+`ttl` < unix_timestamp() OR (`lock_acquired` AND IFNULL(IS_USED_LOCK('
                . $this->lit($n) . '),0) != `connection_id`)); SELECT ROW_COUNT()');
            $trace['cleaned'] = $del[0] ?? '?';
            return false;
        }
        $got = $this->q('SELECT GET_LOCK(' . $this->lit($n) . ', 0)');
        $trace['get_lock'] = $got[0] ?? '?';
        if (($got[0] ?? '') !== '1') {
            $this->q('DELETE FROM ' . $this->t() . ' WHERE `name`=' . $this->lit($n) . ' AND `connection_id`=connection_id()');
            return false;
        }
        $this->q('UPDATE ' . $this->t() . ' SET `lock_acquired`=true WHERE `name`=' . $this->lit($n) . ' AND `connection_id`=connection_id()');
        return true;
    }

    /** its-mieger's unlock(): true if its row was there. */
    public function release(string $n): bool
    {
        $del = $this->q('DELETE FROM ' . $this->t() . ' WHERE `name`=' . $this->lit($n)
            . ' AND `connection_id`=connection_id(); SELECT ROW_COUNT()');
        $this->q('SELECT RELEASE_LOCK(' . $this->lit($n) . ')');
        return ($del[0] ?? '') === '1';
    }

    /** its-mieger's wait step: the holder's remaining TTL (server clock). */
    public function remainingTtl(string $n): ?int
    {
        $r = $this->q('SELECT `created`+`ttl`-unix_timestamp() FROM ' . $this->t() . ' WHERE `name`=' . $this->lit($n));
        return isset($r[0]) && is_numeric($r[0]) ? (int) $r[0] : null;
    }

    public function close(): void
    {
        if ($this->proc !== null) {
            fclose($this->pipes[0]);
            stream_get_contents($this->pipes[1]);
            fclose($this->pipes[1]);
            proc_close($this->proc);
            $this->proc = null;
        }
    }

    public function __destruct()
    {
        if ($this->proc !== null) {
            proc_terminate($this->proc, 9);
            proc_close($this->proc);
        }
    }
}

$base = $argv[1] ?? '';
if (!preg_match('#^(mysql|mariadb)://#', $base)) {
    fwrite(STDERR, "usage: test_compat.php mysql://...\n");
    exit(2);
}
T::$tag = '[compat]';

function withTable(string $url, ?string $table): string
{
    return $table === null ? $url : $url . (str_contains($url, '?') ? '&' : '?') . 'table=' . $table;
}

function scenario(string $base, ?string $table): void
{
    $tableName = $table ?? 'shared_locks';
    $url = withTable($base, $table);
    SharedLock::setStoreUrl($url);
    $seed = new Seed($base, $tableName);
    $child = new Child($url, ['DLOCK_TEST_COMPAT_URL' => $url]);
    $n = T::name("fac-$tableName");

    // Two facade users exclude each other.
    $h = SharedLock::lock($n, 0, 10);
    T::ok($h instanceof SharedLockHandle, "$tableName: SharedLock::lock() returns a SharedLockHandle");
    T::ok(is_int($h->fence()) && $h->fence() > 0, "$tableName: the handle has a fence ({$h->fence()})");
    T::ok($child->ask("flock $n 0 10") === 'timeout', "$tableName: another facade process: SharedLockTimeoutException");
    $t = microtime(true);
    T::ok($child->ask("flock $n 0.5 10") === 'timeout' && microtime(true) - $t >= 0.45, "$tableName: ... also after waiting 0.5 s");
    $e = null;
    try {
        SharedLock::lock($n, 0, 10);
    } catch (SharedLockTimeoutException $e) {
    }
    T::ok($e !== null && $e->getLockName() === $n && $e->getTimeout() === 0, "$tableName: SharedLockTimeoutException with name and timeout");
    T::ok($e instanceof SharedLockAcquireException, "$tableName: ... which is a SharedLockAcquireException, as in the original");

    // The seed library, on the same table, is kept out.
    $got = $seed->lock($n, 10, $trace);
    T::ok(!$got, "$tableName: the seed client cannot lock while the facade holds (" . json_encode($trace) . ')');
    T::ok(str_contains($trace['insert'] ?? '', '1062'), "$tableName: its register fails with a duplicate key");
    T::ok(($trace['cleaned'] ?? '') === '0', "$tableName: its obsolete-row clean-up removes nothing");
    T::ok($seed->q('SELECT GET_LOCK(' . $seed->lit($n) . ', 0)') === ['0'], "$tableName: its GET_LOCK(name, 0) fails");
    $rem = $seed->remainingTtl($n);
    T::ok($rem !== null && $rem >= 1 && $rem <= 11, "$tableName: it sees the facade's lease in created+ttl ($rem s)");

    $h->assertTTL(5);
    T::ok(true, "$tableName: assertTTL(5) passes");
    T::throws(SharedLockRemainingTTLException::class, fn () => SharedLock::assertTTL($n, 60), "$tableName: assertTTL(60) of a 10 s lease: SharedLockRemainingTTLException");
    T::ok($h->release() === $h, "$tableName: release() returns the handle");
    T::throws(SharedLockReleaseException::class, fn () => $h->release(), "$tableName: a second release(): SharedLockReleaseException");

    // The seed holds: the facade is kept out, and a waiting facade gets it
    // when the seed releases.
    T::ok($seed->lock($n, 10), "$tableName: the seed client locks once the facade released");
    T::throws(SharedLockTimeoutException::class, fn () => SharedLock::lock($n, 0, 10), "$tableName: the facade cannot lock while the seed holds");
    $child->send("flock $n 20 10");
    usleep(200000);   // only gives the wait a chance to start; the answer is the barrier
    T::ok($seed->release($n), "$tableName: the seed client releases (its row was there)");
    $ans = $child->read();
    T::ok(str_starts_with($ans, 'got '), "$tableName: the waiting facade process gets it after the seed's release ($ans)");
    T::ok(!$seed->lock($n, 10), "$tableName: the seed client is kept out of the facade process's lock");
    T::ok($child->ask("funlock $n") === 'released', "$tableName: the facade process releases");
    T::ok($seed->lock($n, 10) && $seed->release($n), "$tableName: the seed client locks and releases again");

    // A seed holder past its TTL is taken over (the original's KILL
    // almost never ran; dlock's does, for exactly that session).
    $n2 = T::name("ttl-$tableName");
    T::ok($seed->lock($n2, 1), "$tableName: the seed client locks with a 1 s TTL");
    $t = microtime(true);
    try {
        $h2 = SharedLock::lock($n2, 8, 10);
        T::ok(microtime(true) - $t < 8, sprintf("$tableName: the facade takes over once the seed's TTL is over (%.1f s)", microtime(true) - $t));
        $out = $seed->q('SELECT 1');
        // Its connection lost (2013 during the query, or 2006 gone away),
        // not merely no answer (TIMEOUT).
        T::ok($out !== ['1'] && !in_array('TIMEOUT', $out, true) && preg_grep('/^ERROR 20(13|06) /', $out) !== [],
            "$tableName: the seed's session was KILLed (" . implode(' ', $out) . ')');
        $h2->release();
    } catch (SharedLockAcquireException $e) {
        T::ok(false, "$tableName: the facade takes over an expired seed holder", $e->getMessage() . ' ' . ($e->getPrevious()?->getMessage() ?? ''));
    }
    $seed->close();

    // LOST: broken by another process; the facade sees it.
    $n3 = T::name("lost-$tableName");
    $h3 = SharedLock::lock($n3, 0, 3);
    T::ok(!$h3->isLost(), "$tableName: held before the break");
    T::ok($child->ask("force $n3") === 'removed 1', "$tableName: another process breaks it");
    $t = microtime(true);
    while (!$h3->isLost() && microtime(true) - $t < 4) {
        usleep(20000);
    }
    T::ok($h3->isLost(), sprintf("$tableName: isLost() within the lease (%.2f s)", microtime(true) - $t));
    T::throws(SharedLockRemainingTTLException::class, fn () => $h3->assertTTL(1), "$tableName: assertTTL() of a lost lock: SharedLockRemainingTTLException");
    $e = T::throws(SharedLockReleaseException::class, fn () => $h3->release(), "$tableName: release() of a lost lock: SharedLockReleaseException");
    T::ok($e !== null && $e->getPrevious() instanceof Dlock\LostException, "$tableName: ... caused by Dlock\\LostException");

    T::ok($child->close() === 0, "$tableName: the facade process ends cleanly");
}

T::block('API', function () use ($base) {
    T::ok(SharedLock::getTable() === 'shared_locks', 'getTable() is shared_locks');
    T::ok(SharedLock::QUOTE_STYLE_DEFAULT === 0 && SharedLock::QUOTE_STYLE_ANSI === 1, 'the quote style constants');
    T::throws(\InvalidArgumentException::class, fn () => SharedLock::setQuoteStyle(7), 'setQuoteStyle(7): InvalidArgumentException');
    SharedLock::setQuoteStyle(SharedLock::QUOTE_STYLE_DEFAULT);
    T::throws(\BadMethodCallException::class, fn () => SharedLock::setConnection((new ReflectionClass(PDO::class))->newInstanceWithoutConstructor()), 'setConnection(PDO): not possible, says so');
    T::throws(SharedLockReleaseException::class, fn () => SharedLock::unlock(T::name('never')), 'unlock() of a name not held: SharedLockReleaseException');
    T::throws(SharedLockRemainingTTLException::class, fn () => SharedLock::assertTTL(T::name('never')), 'assertTTL() of a name not held: SharedLockRemainingTTLException');

    $u = parse_url($base);
    SharedLock::configureConnection($u['host'], ltrim($u['path'], '/'), rawurldecode($u['user']), rawurldecode($u['pass'] ?? ''), 'utf8mb4', $u['port'] ?? null);
    $n = T::name('configured');
    $h = SharedLock::lock($n, 1, 10);
    T::ok(true, 'configureConnection() as in the original, then lock()');
    T::ok(!str_contains(SharedLock::getStoreUrl(), (string) ($u['pass'] ?? "\0")) && str_contains(SharedLock::getStoreUrl(), '***'), 'getStoreUrl() hides the password: ' . SharedLock::getStoreUrl());
    $h->release();

    SharedLock::configureConnection('127.0.0.1', 'x', 'nobody', 'topsecret9', 'utf8mb4', 1);
    $e = T::throws(SharedLockException::class, fn () => SharedLock::lock(T::name('unreachable'), 0, 10), 'an unreachable server: a SharedLockException');
    T::ok($e !== null && !str_contains($e->getMessage(), 'topsecret9'), 'no password in its message: ' . ($e ? $e->getMessage() : ''));
    SharedLock::setStoreUrl($base);
    T::throws(SharedLockAcquireException::class, fn () => SharedLock::lock('', 0, 10), 'an empty name: SharedLockAcquireException');
});

T::block('class aliases', function () use ($base) {
    require __DIR__ . '/../compat-aliases.php';
    T::ok(!class_exists('ItsMieger\\MySqlSharedLocks\\Nope'), 'compat-aliases.php: unknown names stay unknown');
    $orig = 'ItsMieger\\MySqlSharedLocks\\SharedLock';
    $orig::setStoreUrl($base);
    $n = T::name('aliased');
    $h = $orig::lock($n, 0, 10);
    T::ok($h instanceof SharedLockHandle, 'compat-aliases.php: ItsMieger\\MySqlSharedLocks\\SharedLock::lock() is the facade');
    $caught = false;
    try {
        $orig::lock($n, 0, 10);
    } catch (ItsMieger\MySqlSharedLocks\Exception\SharedLockTimeoutException $e) {
        $caught = true;
    }
    T::ok($caught, "compat-aliases.php: catch (ItsMieger\\...\\SharedLockTimeoutException) catches the facade's");
    $h->release();
});

T::block('shared_locks table', fn () => scenario($base, null));

// A table made with its-mieger's exact DDL (MyISAM, latin1), under a name of
// this run's own.
$tbl = 'php_seed_' . getmypid();
$admin = new Seed($base, $tbl);
$ddl = $admin->q("CREATE TABLE `$tbl` (\n`name` varchar(64) NOT NULL,\n`connection_id` bigint(20) NOT NULL,\n`created` bigint(20) NOT NULL,\n"
    . "`ttl` bigint(20) NOT NULL,\n`lock_acquired` tinyint(1) NOT NULL,\nUNIQUE KEY `shared_locks_ix1` (`name`)\n) ENGINE=MyISAM DEFAULT CHARSET=latin1");
T::ok($ddl === [], "a table with the seed's DDL ($tbl)", implode(' ', $ddl));
T::block("the seed's DDL, before dlock's ALTER", function () use ($base, $tbl) {
    SharedLock::setStoreUrl(withTable($base, $tbl));
    $e = T::throws(SharedLockException::class, fn () => SharedLock::lock(T::name('pre-alter'), 0, 10), "$tbl: refused until dlock's columns are added");
    T::ok($e !== null && str_contains($e->getMessage(), 'lacks dlock'), "$tbl: ... saying so: " . ($e ? $e->getMessage() : ''));
});
// The ALTER TABLE that `dlock init --print` (Dlock\Store::ddl()) gives for
// a table the original library created: its commented-out first ALTER.
$alter = '';
if (preg_match('/^-- (ALTER TABLE `' . $tbl . '`\n(?:--  .*\n)*?--  .*;)$/m', Dlock\Store::ddl(withTable($base, $tbl)), $m)) {
    $alter = preg_replace('/^-- ?/m', '', $m[1]);
}
$out = $alter === '' ? ['no ALTER in the DDL'] : $admin->q(rtrim($alter, ';'));
if (T::ok($out === [], "$tbl: the ALTER TABLE of Store::ddl() applied", implode(' ', $out))) {
    T::block("the seed's DDL", fn () => scenario($base, $tbl));
}
$admin->q("DROP TABLE IF EXISTS `$tbl`, `{$tbl}_fences`, `{$tbl}_seq`; DROP PROCEDURE IF EXISTS `{$tbl}_acq2`; DROP PROCEDURE IF EXISTS `{$tbl}_rel1`");
$admin->close();

T::done();
