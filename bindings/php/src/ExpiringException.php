<?php

declare(strict_types=1);

namespace Dlock;

/** the lock is held, but with less lease left than asked (Lock::assertTtl()). */
class ExpiringException extends Exception
{
}
