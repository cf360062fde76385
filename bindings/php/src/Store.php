<?php

declare(strict_types=1);

namespace Dlock;

/**
 * A store: a connection (or pool) to one database, through libdlock.
 *
 *     $store = new Dlock\Store('redis://127.0.0.1:6379');
 *     $lock = $store->lock('nightly-report', wait: 5, ttl: 30);
 *
 * URLs are libdlock's ("sqlite:///abs/path.db", "redis://...",
 * "postgres://...", "mysql://..."; null or "" is the default store, a
 * SQLite file private to the user: see Store::defaultUrl()).
 */
final class Store
{
    /** Store::lock()'s $wait for "wait until acquired". */
    public const FOREVER = -1.0;

    /** How often observe() re-reads the leader on a store without notifications (SQLite, MariaDB/MySQL), in seconds. */
    public const OBSERVE_POLL = 0.25;

    /** @var \FFI\CData|null dlock_store* */
    private $handle;
    /** observe() calls in flight: their callbacks may not close() the store. */
    private int $observing = 0;

    /**
     * Open a store.
     * @throws InvalidArgumentException a malformed URL
     * @throws NotSupportedException a scheme not compiled into libdlock
     * @throws UnavailableException|StoreException the store cannot be opened
     */
    public function __construct(?string $url = null)
    {
        $ffi = Ffi::get();
        if ($url !== null && str_contains($url, "\0")) {
            throw new InvalidArgumentException('a store URL cannot contain a NUL byte', Exception::EINVAL);
        }
        $out = $ffi->new('dlock_store *');
        $rc = $ffi->dlock_store_open(\FFI::addr($out), $url);
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc);
        }
        $this->handle = $out;
    }

    public function __destruct()
    {
        $this->close();
    }

    /**
     * Close the store.  Locks still held through it are released; later
     * calls on them throw LostException ("its store was closed").
     */
    public function close(): void
    {
        // Inside observe()'s callback dlock_observe() is still using the
        // handle: closing it there freed it under the call (a crash).
        if ($this->observing > 0) {
            throw new InvalidArgumentException(
                "close() inside observe()'s callback: return false from the callback first, then close",
                Exception::EINVAL
            );
        }
        if ($this->handle !== null) {
            $h = $this->handle;
            $this->handle = null;
            Ffi::get()->dlock_store_close($h);
        }
    }

    /** The store's URL with any password replaced by "***". */
    public function url(): string
    {
        return Ffi::str(Ffi::get()->dlock_store_url($this->h()));
    }

    /** Create the store's tables if missing (stores do this on first use anyway). */
    public function init(): void
    {
        $rc = Ffi::get()->dlock_store_init($this->h());
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc);
        }
    }

    /**
     * Acquire the lock $name.
     *
     * @param string     $name   1..1024 bytes of UTF-8, no NUL.
     * @param float|null $wait   0 (the default): try once; > 0: wait up to
     *                           this many seconds; null, INF or
     *                           Store::FOREVER (any negative number): wait
     *                           until acquired (as Python's None; until
     *                           issue 47 null tried once).
     * @param float      $ttl    the lease, in seconds (0.1 .. 365 days).
     *                           libdlock's own thread renews it every
     *                           third of it while the lock is held (also
     *                           while this PHP process is busy), unless
     *                           $autoRenew is false.
     * @param bool       $shared a shared (read) lock.
     * @param int|null   $limit  N >= 2: a semaphore of N holders (null or
     *                           1: a lock).
     * @return Lock|null the lock, or null if someone else holds it and
     *                   it was not acquired in time.
     * @throws InvalidArgumentException a bad name or option (nothing sent)
     * @throws NotSupportedException e.g. shared on a store without them
     * @throws UnavailableException|StoreException
     */
    public function lock(
        string $name,
        ?float $wait = 0,
        float $ttl = 30,
        bool $shared = false,
        ?int $limit = null,
        bool $autoRenew = true
    ): ?Lock {
        $ffi = Ffi::get();
        $opts = self::options($wait, $ttl, $autoRenew);
        $opts->shared = $shared ? 1 : 0;
        if ($limit !== null) {
            if ($limit < 0 || $limit > 0xFFFFFFFF) {
                throw new InvalidArgumentException("bad limit $limit: 1..1024", Exception::EINVAL);
            }
            $opts->limit = $limit;
        }
        $out = $ffi->new('dlock_lock *');
        $rc = $ffi->dlock_acquire_len(\FFI::addr($out), $this->h(), $name, strlen($name), \FFI::addr($opts));
        if ($rc === Exception::BUSY) {
            return null;
        }
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc);
        }
        return new Lock($this, $out, $name);
    }

    /**
     * Campaign for the leadership of $name (dlock_elect()): wait until this
     * candidate leads, then publish $value.  Leadership is the lock $name:
     * candidates exclude each other, and lock($name) too.
     *
     * @param string      $name  as lock().
     * @param string|null $value what the leader publishes: up to 4096
     *                           bytes of UTF-8, no NUL; null or '' for none.
     * @param float|null  $wait  as lock(): 0 (the default) tries once,
     *                           null waits until elected.
     * @return Lock|null the leader (a held Lock: fence() is the term,
     *                   proclaim() changes the value, release() resigns),
     *                   or null if another leads and this one did not
     *                   take over in time.
     * @throws InvalidArgumentException a bad name, value or option
     * @throws NotSupportedException a store without election
     * @throws UnavailableException|StoreException
     */
    public function elect(
        string $name,
        ?string $value = null,
        ?float $wait = 0,
        float $ttl = 30,
        bool $autoRenew = true
    ): ?Lock {
        self::noNul($name, 'name');
        if ($value !== null) {
            self::noNul($value, 'leader value');
        }
        $ffi = Ffi::get();
        $opts = self::options($wait, $ttl, $autoRenew);
        $out = $ffi->new('dlock_lock *');
        $rc = $ffi->dlock_elect(\FFI::addr($out), $this->h(), $name, $value === '' ? null : $value, \FFI::addr($opts));
        if ($rc === Exception::BUSY) {
            return null;
        }
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc, "elect \"$name\"");
        }
        return new Lock($this, $out, $name, $value);
    }

    /**
     * Who leads $name now, read from the store; null if nobody does.
     * @throws InvalidArgumentException|NotSupportedException|UnavailableException|StoreException
     */
    public function leader(string $name): ?Leader
    {
        self::noNul($name, 'name');
        $ffi = Ffi::get();
        $out = $ffi->new('dlock_info *');
        $rc = $ffi->dlock_leader(\FFI::addr($out), $this->h(), $name);
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc, "leader \"$name\"");
        }
        try {
            return Leader::fromC($out[0]);
        } finally {
            $ffi->dlock_info_free($out);
        }
    }

    /**
     * Call $onChange(?Leader) with $name's leader at once, then each time
     * it changes (another term, another value, nobody), until it returns
     * false (dlock_observe()).  Every call reports what was read from the
     * store: on SQLite and MariaDB/MySQL the store is polled every
     * Store::OBSERVE_POLL seconds, on the others a change is seen within a
     * second.  Only $onChange can stop it (returning false, or throwing:
     * the exception propagates); SIGINT ends the script as during a wait.
     * @throws UnavailableException the store went away (call again to go on)
     * @throws InvalidArgumentException|NotSupportedException|StoreException
     */
    public function observe(string $name, callable $onChange): void
    {
        self::noNul($name, 'name');
        $ffi = Ffi::get();
        $error = null;
        // Called synchronously, on this thread, inside dlock_observe().
        $cb = function ($info, $payload) use ($onChange, &$error): int {
            try {
                return $onChange(Leader::fromC($info[0])) === false ? 1 : 0;
            } catch (\Throwable $e) {
                $error = $e;
                return 1;
            }
        };
        $h = $this->h();
        $this->observing++;
        try {
            $rc = $ffi->dlock_observe($h, $name, $cb, null, null);
        } finally {
            $this->observing--;
        }
        if ($error !== null) {
            throw $error;
        }
        if ($rc < 0) {
            throw Exception::fromRc($rc, "observe \"$name\"");
        }
    }

    /**
     * What the store knows about $name (held or not).
     * @throws InvalidArgumentException|UnavailableException|StoreException
     */
    public function status(string $name): LockInfo
    {
        self::noNul($name, 'name');
        $ffi = Ffi::get();
        $out = $ffi->new('dlock_info *');
        $rc = $ffi->dlock_status(\FFI::addr($out), $this->h(), $name);
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc);
        }
        try {
            return LockInfo::fromC($out[0]);
        } finally {
            $ffi->dlock_info_free($out);
        }
    }

    /**
     * The held locks whose name starts with $prefix ('' or null: all), in
     * no particular order.
     * @return LockInfo[]
     */
    public function list(?string $prefix = null): array
    {
        if ($prefix !== null) {
            self::noNul($prefix, 'prefix');
        }
        $ffi = Ffi::get();
        $found = [];
        $error = null;
        // Called synchronously, on this thread, inside dlock_list().
        $cb = function ($info, $payload) use (&$found, &$error): int {
            try {
                $found[] = LockInfo::fromC($info[0]);
                return 0;
            } catch (\Throwable $e) {
                $error = $e;
                return 1;
            }
        };
        $rc = $ffi->dlock_list($this->h(), $prefix, $cb, null);
        if ($error !== null) {
            throw $error;
        }
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc);
        }
        return $found;
    }

    /**
     * Break $name whoever holds it (administration).  Its holder finds it
     * lost.  Returns how many holders were removed.
     */
    public function forceRelease(string $name): int
    {
        self::noNul($name, 'name');
        $ffi = Ffi::get();
        $removed = $ffi->new('unsigned');
        $rc = $ffi->dlock_force_release(\FFI::addr($removed), $this->h(), $name);
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc);
        }
        return $removed->cdata;
    }

    /**
     * The kept runs of $name (all of them: Run::KEPT unless keepRuns()
     * said otherwise), newest first; $max > 0 keeps the newest $max.
     * @return Run[]
     * @throws NotSupportedException a store without run records
     */
    public function history(string $name, int $max = 0): array
    {
        self::noNul($name, 'name');
        if ($max < 0 || $max > 0xFFFFFFFF) {
            throw new InvalidArgumentException("bad max $max", Exception::EINVAL);
        }
        return $this->runs(fn ($ffi, $cb) => $ffi->dlock_history($this->h(), $name, $max, $cb, null));
    }

    /**
     * Keep $n runs of $name (dlock_keep_runs()): 1 to Run::KEPT_MAX, or 0
     * for the default, Run::KEPT.  The setting is recorded with the name's
     * run records, so every host's runs of it keep to it; the runs over it
     * are dropped now, oldest first (setting it higher again brings none
     * back).
     * @throws InvalidArgumentException a bad name, or $n out of range
     * @throws NotSupportedException a store that cannot keep a setting yet
     * @throws UnavailableException|StoreException
     */
    public function keepRuns(string $name, int $n = 0): void
    {
        self::noNul($name, 'name');
        if ($n < 0 || $n > 0xFFFFFFFF) {
            // FFI would wrap it to an unsigned; in range of one the library says so.
            throw new InvalidArgumentException(
                "keep runs \"$name\": a name keeps 1.." . Run::KEPT_MAX . ' runs (0: the default, ' . Run::KEPT . "), not $n",
                Exception::EINVAL
            );
        }
        $rc = Ffi::get()->dlock_keep_runs($this->h(), $name, $n);
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc, "keep runs \"$name\"");
        }
    }

    /**
     * How many runs $name keeps (dlock_kept_runs()): its keepRuns()
     * setting, Run::KEPT if none was recorded.
     * @throws InvalidArgumentException|NotSupportedException|UnavailableException|StoreException
     */
    public function keptRuns(string $name): int
    {
        self::noNul($name, 'name');
        $ffi = Ffi::get();
        $out = $ffi->new('unsigned');
        $rc = $ffi->dlock_kept_runs(\FFI::addr($out), $this->h(), $name);
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc, "kept runs \"$name\"");
        }
        return $out->cdata;
    }

    /**
     * The last run of every name starting with $prefix ('' or null: all)
     * that has run records, in no particular order.
     * @return Run[]
     */
    public function lastRuns(?string $prefix = null): array
    {
        if ($prefix !== null) {
            self::noNul($prefix, 'prefix');
        }
        return $this->runs(fn ($ffi, $cb) => $ffi->dlock_last_runs($this->h(), $prefix, $cb, null));
    }

    /**
     * Run $fn under the lock $name unless a run already did the job, and
     * record the run (what `dlock run --once` / `--once-per` do).
     *
     * @param bool       $once    not again once a run succeeded.
     * @param float|null $oncePer seconds, the schedule's interval: not
     *                            again within $oncePer / 2 of the last
     *                            run's start (the store's clock).
     * @param float|null $wait    as lock(); default: wait until acquired
     *                            (a second host waits for the first, then
     *                            skips).  Not acquired in time: busy.
     * $fn returning is a success (exit status 0); $fn throwing records
     * status 1 and the exception propagates.  A lock lost while $fn ran
     * is recorded LOST and LostException is thrown.
     * @throws LostException|NotSupportedException|UnavailableException|StoreException
     */
    public function runOnce(
        string $name,
        callable $fn,
        bool $once = false,
        ?float $oncePer = null,
        ?float $wait = self::FOREVER,
        float $ttl = 30
    ): RunOutcome {
        $lock = $this->lock($name, $wait, $ttl);
        if ($lock === null) {
            return new RunOutcome(false, null, null, true);
        }
        try {
            [$go, $last] = $lock->runBegin($once, $oncePer);
            if (!$go) {
                return new RunOutcome(false, null, $last);
            }
            try {
                $value = $fn();
            } catch (\Throwable $e) {
                try {
                    $lost = $lock->isLost();
                    $lock->runEnd($lost ? Run::LOST : Run::EXITED, $lost ? -1 : 1);
                } catch (Exception $ignored) {
                }
                throw $e;
            }
            if ($lock->isLost()) {
                $lock->runEnd(Run::LOST, 0);
                throw new LostException("run_once: lock \"$name\" was lost while the job ran", Exception::LOST);
            }
            $lock->runEnd(Run::EXITED, 0);
            return new RunOutcome(true, $value, $last);
        } finally {
            if ($lock->isHeld()) {
                $lock->release();
            } else {
                // Lost: free the handle; its LostException is the one above.
                try {
                    $lock->release();
                } catch (Exception $ignored) {
                }
            }
        }
    }

    /**
     * Suspend $name everywhere (dlock_suspend()): from now on
     * Lock::runBegin() of it skips (go false, $last a Run::SUSPENDED run)
     * and runOnce() does not call the job, on every host, until resume().
     * A run already going on goes on.
     *
     * @param string|null $reason why: up to Suspension::REASON_MAX bytes of
     *                            UTF-8 without control characters; null: none.
     * @param string|null $by     who: up to 255 bytes likewise; null: USER@HOST.
     * @return bool true if $name was suspended already (its record is left
     *              as it was), else false.
     * @throws InvalidArgumentException a bad name, reason or by
     * @throws NotSupportedException a store without suspension
     * @throws UnavailableException|StoreException
     */
    public function suspend(string $name, ?string $reason = null, ?string $by = null): bool
    {
        self::noNul($name, 'name');
        if ($reason !== null) {
            self::noNul($reason, 'reason');
        }
        if ($by !== null) {
            self::noNul($by, 'by');
        }
        $ffi = Ffi::get();
        $was = $ffi->new('int');
        $rc = $ffi->dlock_suspend(\FFI::addr($was), $this->h(), $name, $by, $reason);
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc, "suspend \"$name\"");
        }
        return $was->cdata !== 0;
    }

    /**
     * Lift $name's suspension (dlock_resume()): the Suspension lifted, or
     * null if it was not suspended.
     * @throws InvalidArgumentException|NotSupportedException|UnavailableException|StoreException
     */
    public function resume(string $name): ?Suspension
    {
        return $this->suspension('dlock_resume', 'resume', $name);
    }

    /**
     * $name's Suspension (dlock_suspended()), or null if it is not
     * suspended.
     * @throws InvalidArgumentException|NotSupportedException|UnavailableException|StoreException
     */
    public function suspended(string $name): ?Suspension
    {
        return $this->suspension('dlock_suspended', 'suspended', $name);
    }

    /**
     * Every suspended name starting with $prefix ('' or null: all), in no
     * particular order.
     * @return Suspension[]
     * @throws InvalidArgumentException|NotSupportedException|UnavailableException|StoreException
     */
    public function suspensions(?string $prefix = null): array
    {
        if ($prefix !== null) {
            self::noNul($prefix, 'prefix');
        }
        $ffi = Ffi::get();
        $found = [];
        $error = null;
        // Called synchronously, on this thread, inside dlock_suspensions().
        $cb = function ($s, $payload) use (&$found, &$error): int {
            try {
                $found[] = Suspension::fromC($s[0]);
                return 0;
            } catch (\Throwable $e) {
                $error = $e;
                return 1;
            }
        };
        $rc = $ffi->dlock_suspensions($this->h(), $prefix, $cb, null);
        if ($error !== null) {
            throw $error;
        }
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc, 'suspensions');
        }
        return $found;
    }

    /** dlock_resume()/dlock_suspended(): one record handed out, or none. */
    private function suspension(string $fn, string $what, string $name): ?Suspension
    {
        self::noNul($name, 'name');
        $ffi = Ffi::get();
        $out = $ffi->new('dlock_suspension *');
        $rc = $ffi->$fn(\FFI::addr($out), $this->h(), $name);
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc, "$what \"$name\"");
        }
        if (\FFI::isNull($out)) {
            return null;
        }
        try {
            return Suspension::fromC($out[0]);
        } finally {
            $ffi->dlock_suspension_free($out);
        }
    }

    /** dlock_history()/dlock_last_runs(): $call($ffi, $cb) returns a code. */
    private function runs(callable $call): array
    {
        $ffi = Ffi::get();
        $found = [];
        $error = null;
        // Called synchronously, on this thread, inside the call.
        $cb = function ($run, $payload) use (&$found, &$error): int {
            try {
                $found[] = Run::fromC($run[0]);
                return 0;
            } catch (\Throwable $e) {
                $error = $e;
                return 1;
            }
        };
        $rc = $call($ffi, $cb);
        if ($error !== null) {
            throw $error;
        }
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc);
        }
        return $found;
    }

    /** The library version (dlock_version()). */
    public static function version(): string
    {
        return Ffi::str(Ffi::get()->dlock_version());
    }

    /** The URL schemes compiled into libdlock, e.g. ["sqlite", "redis", ...]. */
    public static function schemes(): array
    {
        $s = Ffi::str(Ffi::get()->dlock_schemes());
        return $s === '' ? [] : explode(',', $s);
    }

    /** The store used when no URL is given. */
    public static function defaultUrl(): string
    {
        return Ffi::str(Ffi::get()->dlock_default_url());
    }

    /**
     * The DDL the store at $url would run (tables, and for MySQL the
     * ALTER TABLE for a table its-mieger/mysql-shared-locks created), for a
     * DBA to run.  Does not connect.
     */
    public static function ddl(?string $url = null): string
    {
        if ($url !== null) {
            self::noNul($url, 'URL');
        }
        return self::ownedString(fn ($ffi, $out) => $ffi->dlock_ddl($out, $url));
    }

    /** A URL with any password replaced by "***" (safe to log). */
    public static function redact(string $url): string
    {
        self::noNul($url, 'URL');
        return self::ownedString(
            fn ($ffi, $out) => $ffi->dlock_url_redact($out, $url));
    }

    /**
     * A string the library allocates: $call($ffi, $out) fills the char **
     * $out and returns a code; the text is copied and freed with
     * dlock_free().
     */
    private static function ownedString(callable $call): string
    {
        $ffi = Ffi::get();
        $out = $ffi->new('char *');
        $rc = $call($ffi, \FFI::addr($out));
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc);
        }
        try {
            return \FFI::string($out);
        } finally {
            $ffi->dlock_free($out);
        }
    }

    /** @internal the dlock_store* */
    public function h()
    {
        if ($this->handle === null) {
            throw new InvalidArgumentException('the store is closed', Exception::EINVAL);
        }
        return $this->handle;
    }

    /** dlock_options with $wait, $ttl and $autoRenew (the rest the defaults). */
    private static function options(?float $wait, float $ttl, bool $autoRenew)
    {
        $ffi = Ffi::get();
        $opts = $ffi->new('dlock_options');
        $rc = $ffi->dlock_options_init(\FFI::addr($opts), Ffi::OPTIONS_VERSION);
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc);
        }
        $opts->wait_ms = self::waitMs($wait);
        if (!is_finite($ttl) || abs($ttl) > 1e15) {
            throw new InvalidArgumentException("bad ttl $ttl: seconds, 0.1 up to 365 days", Exception::EINVAL);
        }
        $opts->ttl_ms = (int) round($ttl * 1000);
        $opts->auto_renew = $autoRenew ? 1 : 0;
        // on_lost stays NULL: PHP must never be entered from libdlock's
        // renew thread.  Loss is polled (Lock::isLost(), every call).
        return $opts;
    }

    /** docs/library.md's table: null, INF or negative wait until
     * acquired (Python's None, C's DLOCK_WAIT_FOREVER); 0 tries once. */
    private static function waitMs(?float $wait): int
    {
        if ($wait === null) {
            return -1;
        }
        if ($wait == 0) {
            return 0;
        }
        if (is_nan($wait)) {
            throw new InvalidArgumentException('bad wait NAN', Exception::EINVAL);
        }
        if ($wait < 0 || $wait * 1000 >= 9.2e18) {
            return -1;
        }
        return max(1, (int) ceil($wait * 1000));
    }

    private static function noNul(string $s, string $what): void
    {
        if (str_contains($s, "\0")) {
            throw new InvalidArgumentException("a $what cannot contain a NUL byte", Exception::EINVAL);
        }
    }
}
