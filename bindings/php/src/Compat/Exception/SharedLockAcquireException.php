<?php

declare(strict_types=1);

namespace Dlock\Compat\Exception;

/** Acquiring a lock failed (other than by timeout). */
class SharedLockAcquireException extends SharedLockException
{
    public function __construct($lockName, $message = '', $code = 0, ?\Throwable $previous = null)
    {
        if ($message === '' || $message === null) {
            $message = "Acquiring lock \"$lockName\" failed";
        }
        parent::__construct($lockName, $message, $code, $previous);
    }
}
