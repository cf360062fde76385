<?php

declare(strict_types=1);

namespace Dlock\Compat;

/**
 * A held lock, as its-mieger/mysql-shared-locks' SharedLockHandle, plus
 * what dlock adds (fence(), isLost(), getLock()).
 */
class SharedLockHandle
{
    protected $lockName = null;

    public function __construct($lockName)
    {
        $this->lockName = $lockName;
    }

    /**
     * Release the lock.
     * @return $this
     * @throws Exception\SharedLockReleaseException
     */
    public function release()
    {
        SharedLock::unlock($this->lockName);
        return $this;
    }

    /**
     * Check the lock is still held with at least $minRemainingTTL seconds left.
     * @return $this
     * @throws Exception\SharedLockRemainingTTLException
     */
    public function assertTTL($minRemainingTTL = 1)
    {
        SharedLock::assertTTL($this->lockName, $minRemainingTTL);
        return $this;
    }

    /** The lock name. */
    public function getName()
    {
        return $this->lockName;
    }

    /**
     * The lock's fence (see Dlock\Lock::fence()): pass it to what the lock
     * protects, which refuses writes with a lower fence than it has seen.
     * @return int|string
     */
    public function fence()
    {
        return SharedLock::getLock($this->lockName)->fence();
    }

    /** True once the lock is known lost (or no longer held by this process). */
    public function isLost(): bool
    {
        try {
            return SharedLock::getLock($this->lockName)->isLost();
        } catch (Exception\SharedLockException $ex) {
            return true;
        }
    }

    /** The Dlock\Lock behind this handle. */
    public function getLock(): \Dlock\Lock
    {
        return SharedLock::getLock($this->lockName);
    }
}
