<?php

declare(strict_types=1);

namespace Dlock;

/**
 * A held lock (from Store::lock()), or a leader (from Store::elect(): its
 * fence is the term, proclaim() changes its value, release() resigns).
 *
 * LOST is polled, never signalled: PHP is not thread-safe, so libdlock's
 * renew thread never calls into PHP.  isLost() asks the library (no round
 * trip), and every other call checks it first: a call on a lost lock
 * throws LostException.
 *
 * A lock still held when the object is destroyed (unset, end of scope,
 * end of the script) is released; libdlock's atexit() handler releases
 * what is left at exit().
 */
final class Lock
{
    /** @var \FFI\CData|null dlock_lock*, null once released */
    private $handle;
    private Store $store;
    private string $name;
    /** @var int|string */
    private $fence;
    private bool $lostAtRelease = false;
    /** A leader's (Store::elect()): the value it publishes. */
    private ?string $value;

    /** @internal use Store::lock() or Store::elect() */
    public function __construct(Store $store, $handle, string $name, ?string $value = null)
    {
        $this->store = $store;
        $this->handle = $handle;
        $this->name = $name;
        $this->value = $value === '' ? null : $value;
        $this->fence = Ffi::u64(Ffi::get()->dlock_fence($handle));
    }

    public function __destruct()
    {
        if ($this->handle !== null) {
            $h = $this->handle;
            $this->handle = null;
            Ffi::get()->dlock_release($h);
        }
    }

    /** The name the lock was acquired with. */
    public function name(): string
    {
        return $this->name;
    }

    /**
     * The fence of this acquisition: greater than every fence handed out
     * before for the name in this store.  libdlock's fence is a uint64_t:
     * it is returned as an int (every store's fences fit in PHP_INT_MAX,
     * 2^63-1); a value above PHP_INT_MAX would come as its decimal string.
     * @return int|string
     * @throws LostException if the lock is lost or released
     */
    public function fence()
    {
        $this->live();
        return $this->fence;
    }

    /**
     * True once the lock is known lost: broken, taken over, or its lease
     * ran out (as this process counts it) without a renewal.  True also
     * after a release() that found it lost; false after a clean release().
     */
    public function isLost(): bool
    {
        if ($this->handle === null) {
            return $this->lostAtRelease;
        }
        return Ffi::get()->dlock_is_lost($this->handle) !== 0;
    }

    /** Whether this lock is still ours: not released and not lost. */
    public function isHeld(): bool
    {
        return $this->handle !== null && !$this->isLost();
    }

    /** Seconds of lease left as this process counts it (0 once lost). */
    public function leaseLeft(): float
    {
        if ($this->handle === null) {
            return 0.0;
        }
        return Ffi::get()->dlock_lease_left($this->handle) / 1000.0;
    }

    /**
     * Release the lock.
     * @throws LostException it had been lost (someone else's lock is never
     *         deleted), or it was released already
     * @throws UnavailableException|StoreException the store could not be
     *         told (its lease frees the lock then)
     */
    public function release(): void
    {
        if ($this->handle === null) {
            throw new LostException("lock \"{$this->name}\" was released already", Exception::LOST);
        }
        $h = $this->handle;
        $this->handle = null;
        $rc = Ffi::get()->dlock_release($h);
        if ($rc !== Exception::OK) {
            $this->lostAtRelease = ($rc === Exception::LOST);
            throw Exception::fromRc($rc, "release \"{$this->name}\"");
        }
    }

    /**
     * Renew the lease to $ttl seconds from now (null: the lock's own ttl);
     * later automatic renewals use the new length.
     * @throws LostException
     */
    public function extend(?float $ttl = null): void
    {
        $this->live();
        $ms = $ttl === null ? 0 : self::ms($ttl);
        if ($ttl !== null && $ms <= 0) {
            throw new InvalidArgumentException("bad ttl $ttl: at least 0.1 s", Exception::EINVAL);
        }
        $rc = Ffi::get()->dlock_extend($this->handle, $ms);
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc, "extend \"{$this->name}\"");
        }
    }

    /**
     * Check against the store that the lock is still held with at least
     * $ttl seconds of lease left.
     * @throws ExpiringException held, but with less left
     * @throws LostException
     */
    public function assertTtl(float $ttl): void
    {
        $this->live();
        $rc = Ffi::get()->dlock_assert_ttl($this->handle, self::ms($ttl));
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc, "assert_ttl \"{$this->name}\"");
        }
    }

    /**
     * Decide, with the lock held, whether this holder runs its job now,
     * and if so record the run's start in the same step
     * (dlock_run_begin()).
     *
     * @param bool       $once    not again once a run of this name
     *                            succeeded (anywhere, ever): a migration.
     * @param float|null $oncePer seconds, the schedule's interval (3600
     *                            for an hourly job): not again within
     *                            $oncePer / 2 of the last run's start, on
     *                            the store's clock.
     * @return array{0: bool, 1: ?Run} [go, last]: go true (recorded: end
     *         it with runEnd()) or false (skip: a run already did the
     *         job, or the name is suspended, Store::suspend(), whatever
     *         the rule); last the run that decided a skip (Run::SUSPENDED
     *         for a suspension: who, since when), or the run before this
     *         one (null if none).
     * @throws LostException (nothing recorded)
     * @throws NotSupportedException a store without run records
     */
    public function runBegin(bool $once = false, ?float $oncePer = null): array
    {
        $this->live();
        $ffi = Ffi::get();
        $rule = $ffi->new('dlock_run_rule');
        $rule->once = $once ? 1 : 0;
        $period = 0;
        if ($oncePer !== null) {
            if (is_nan($oncePer) || $oncePer < 0) {
                throw new InvalidArgumentException("bad oncePer $oncePer: seconds, up to 365 days", Exception::EINVAL);
            }
            $period = self::ms($oncePer);
        }
        $rule->period_ms = $period;
        $go = $ffi->new('int');
        $last = $ffi->new('dlock_run *');
        $rc = $ffi->dlock_run_begin($this->handle, \FFI::addr($rule), \FFI::addr($go), \FFI::addr($last));
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc, "run_begin \"{$this->name}\"");
        }
        $run = null;
        if (!\FFI::isNull($last)) {
            try {
                $run = Run::fromC($last[0]);
            } finally {
                $ffi->dlock_run_free($last);
            }
        }
        return [$go->cdata !== 0, $run];
    }

    /**
     * Record how the run runBegin() started ended (dlock_run_end()).
     * Works on a lost lock too: call it before release().
     *
     * @param int|string $result Run::EXITED ($status the exit status, 0
     *                           for success), Run::SIGNALED ($status the
     *                           signal), Run::LOST ($status -1 or what it
     *                           ended with); or "exited", "signaled", "lost".
     * @throws InvalidArgumentException no run was begun, a bad result
     * @throws LostException the lock was released already
     */
    public function runEnd(int|string $result = Run::EXITED, int $status = 0): void
    {
        if ($this->handle === null) {
            throw new LostException("lock \"{$this->name}\" was released", Exception::LOST);
        }
        if ($status < -2147483648 || $status > 2147483647) {
            throw new InvalidArgumentException("bad status $status", Exception::EINVAL);
        }
        $rc = Ffi::get()->dlock_run_end($this->handle, Run::resultCode($result), $status);
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc, "run_end \"{$this->name}\"");
        }
    }

    /**
     * A leader (a lock from Store::elect()): publish $value (up to 4096
     * bytes of UTF-8, no NUL; null or '' for none) as the leader's, only
     * while it still leads: the store guards the write with its term, so
     * a deposed leader never overwrites its successor's value.
     * @throws LostException no longer leads (nothing written), or released
     * @throws InvalidArgumentException not a lock from Store::elect(), a bad value
     * @throws UnavailableException|StoreException
     */
    public function proclaim(?string $value): void
    {
        $this->live();
        if ($value !== null && str_contains($value, "\0")) {
            throw new InvalidArgumentException('a leader value cannot contain a NUL byte', Exception::EINVAL);
        }
        $rc = Ffi::get()->dlock_proclaim($this->handle, $value === '' ? null : $value);
        if ($rc !== Exception::OK) {
            throw Exception::fromRc($rc, "proclaim \"{$this->name}\"");
        }
        $this->value = $value === '' ? null : $value;
    }

    /** A leader's value: the one Store::elect() or the last proclaim() published (null: none). */
    public function value(): ?string
    {
        return $this->value;
    }

    /** The store this lock was taken in. */
    public function store(): Store
    {
        return $this->store;
    }

    private function live(): void
    {
        if ($this->handle === null) {
            throw new LostException("lock \"{$this->name}\" was released", Exception::LOST);
        }
        if (Ffi::get()->dlock_is_lost($this->handle) !== 0) {
            throw new LostException("lock \"{$this->name}\" was lost", Exception::LOST);
        }
    }

    private static function ms(float $s): int
    {
        if (!is_finite($s) || abs($s) > 1e15) {
            throw new InvalidArgumentException("bad duration $s", Exception::EINVAL);
        }
        return (int) round($s * 1000);
    }
}
