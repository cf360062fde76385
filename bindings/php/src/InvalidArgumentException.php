<?php

declare(strict_types=1);

namespace Dlock;

/** a bad name, URL, option or handle (DLOCK_EINVAL); nothing was sent to the store. */
class InvalidArgumentException extends Exception
{
}
