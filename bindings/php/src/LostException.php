<?php

declare(strict_types=1);

namespace Dlock;

/** the lock was lost (its lease ran out, it was broken or taken over), or it was released already. */
class LostException extends Exception
{
}
