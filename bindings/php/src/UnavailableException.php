<?php

declare(strict_types=1);

namespace Dlock;

/** the store cannot be reached (DLOCK_EUNAVAIL). */
class UnavailableException extends Exception
{
}
