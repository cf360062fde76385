<?php

declare(strict_types=1);

namespace Dlock;

/**
 * A name's suspension (a copy of libdlock's dlock_suspension): what
 * Store::resume(), Store::suspended() and Store::suspensions() report.
 * While a name is suspended, Lock::runBegin() of it skips on every host.
 * Text the library could not vouch for (a record planted in the store)
 * reads "?".
 */
final class Suspension
{
    /** Longest reason, in bytes (DLOCK_REASON_MAX). */
    public const REASON_MAX = 1024;

    public function __construct(
        /** The name suspended. */
        public readonly string $name,
        /** Who suspended it: USER@HOST unless the caller said otherwise. */
        public readonly string $by,
        /** Since when: Unix time in seconds on the store's clock, as Run::$start. */
        public readonly float $since,
        /** Why ('' if no reason was given). */
        public readonly string $reason
    ) {
    }

    /** @internal from a dlock_suspension (lent or handed out by the library: copied at once) */
    public static function fromC($s): self
    {
        return new self(
            \FFI::string($s->name),
            \FFI::string($s->by),
            $s->since_ms / 1000.0,
            \FFI::string($s->reason)
        );
    }

    /** The fields as an array. */
    public function toArray(): array
    {
        return get_object_vars($this);
    }
}
