<?php

declare(strict_types=1);

namespace Dlock;

/** the store answered with an error (DLOCK_ESTORE). */
class StoreException extends Exception
{
}
