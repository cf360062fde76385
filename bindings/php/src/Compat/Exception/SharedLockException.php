<?php

declare(strict_types=1);

namespace Dlock\Compat\Exception;

/**
 * Base of the facade's exceptions (its-mieger/mysql-shared-locks' hierarchy
 * and constructors).  getPrevious() is the Dlock\Exception, if any, with
 * libdlock's code and message.
 */
class SharedLockException extends \Exception
{
    protected $lockName;

    public function __construct($lockName, $message = '', $code = 0, ?\Throwable $previous = null)
    {
        $this->lockName = $lockName;
        parent::__construct($message, $code, $previous);
    }

    /** The lock name. */
    public function getLockName()
    {
        return $this->lockName;
    }
}
