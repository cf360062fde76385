<?php

declare(strict_types=1);

namespace Dlock\Compat\Exception;

/** The lock is not held any more, or with less than the asked TTL left. */
class SharedLockRemainingTTLException extends SharedLockException
{
    protected $ttl;

    public function __construct($lockName, $ttl, $message = '', $code = 0, ?\Throwable $previous = null)
    {
        $this->ttl = $ttl;
        if ($message === '' || $message === null) {
            $message = "Lock \"$lockName\" is not to live for $ttl seconds anymore"
                . ($previous !== null ? ': ' . $previous->getMessage() : '');
        }
        parent::__construct($lockName, $message, $code, $previous);
    }

    public function getTTL()
    {
        return $this->ttl;
    }
}
