<?php

declare(strict_types=1);

namespace Dlock\Compat\Exception;

/** Releasing failed: the lock must be assumed no longer held by this process. */
class SharedLockReleaseException extends SharedLockException
{
    public function __construct($lockName, $message = '', $code = 0, ?\Throwable $previous = null)
    {
        if ($message === '' || $message === null) {
            $message = "Releasing lock \"$lockName\" failed"
                . ($previous !== null ? ': ' . $previous->getMessage() : '');
        }
        parent::__construct($lockName, $message, $code, $previous);
    }
}
