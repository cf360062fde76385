<?php

declare(strict_types=1);

namespace Dlock\Compat\Exception;

/**
 * Kept for code that catches it: the original repaired a crashed MyISAM
 * table itself; dlock never throws this (store errors come as
 * SharedLockAcquireException / SharedLockReleaseException /
 * SharedLockRemainingTTLException with the Dlock\Exception as previous).
 */
class TableRepairException extends \Exception
{
}
