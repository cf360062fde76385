<?php

declare(strict_types=1);

namespace Dlock;

/** the store does not support this, or libdlock/FFI is missing (DLOCK_ENOTSUP). */
class NotSupportedException extends Exception
{
}
