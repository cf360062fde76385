<?php

declare(strict_types=1);

namespace Dlock\Compat\Exception;

/** The lock was not acquired within the timeout. */
class SharedLockTimeoutException extends SharedLockAcquireException
{
    protected $timeout;

    public function __construct($lockName, $timeout, $message = '', $code = 0, ?\Throwable $previous = null)
    {
        $this->timeout = $timeout;
        if ($message === '' || $message === null) {
            $message = "Acquiring lock \"$lockName\" timed out after $timeout seconds";
        }
        parent::__construct($lockName, $message, $code, $previous);
    }

    public function getTimeout()
    {
        return $this->timeout;
    }
}
