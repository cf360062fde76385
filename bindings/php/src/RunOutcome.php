<?php

declare(strict_types=1);

namespace Dlock;

/** What Store::runOnce() did. */
final class RunOutcome
{
    public function __construct(
        /** The job ran (and its run was recorded). */
        public readonly bool $ran,
        /** What the job returned; null when it did not run. */
        public readonly mixed $value,
        /** The run that made it skip, or the run before this one; null if none. */
        public readonly ?Run $last,
        /** Not run because the lock was held by another and not acquired within $wait. */
        public readonly bool $busy = false
    ) {
    }
}
