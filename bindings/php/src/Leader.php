<?php

declare(strict_types=1);

namespace Dlock;

/**
 * Who leads a name (Store::leader(), Store::observe()): the holder of the
 * lock of that name, as the store has it.  Times are in seconds.
 */
final class Leader
{
    public function __construct(
        /** The name led. */
        public readonly string $name,
        /** What the leader published (Store::elect(), Lock::proclaim()); null: none, or none the store can vouch is this term's. */
        public readonly ?string $value,
        /** The term: the leader's fence, greater than every earlier leader's; int|string as Lock::fence(). */
        public readonly int|string $fence,
        /** The leader's host name, '' if unknown. */
        public readonly string $host,
        /** The leader's process id, null if unknown. */
        public readonly ?int $pid,
        /** When it began to lead, Unix time in seconds; null if unknown. */
        public readonly ?float $since,
        /** Lease left, in seconds; null if unknown. */
        public readonly ?float $ttl
    ) {
    }

    /** @internal from a dlock_info (lent by the library: copied at once); null when nobody leads */
    public static function fromC($i): ?self
    {
        if ($i->held === 0) {
            return null;
        }
        // FFI reads a const char * as a string (up to its NUL: a value
        // has none), NULL as null.
        $v = $i->value;
        if ($v instanceof \FFI\CData) {
            $v = \FFI::isNull($v) ? null : \FFI::string($v, (int) $i->value_len);
        }
        return new self(
            \FFI::string($i->name),
            $v,
            Ffi::u64($i->fence),
            \FFI::string($i->host),
            $i->pid === 0 ? null : (int) $i->pid,
            $i->since_ms === 0 ? null : $i->since_ms / 1000.0,
            $i->ttl_ms < 0 ? null : $i->ttl_ms / 1000.0
        );
    }

    /** The fields as an array. */
    public function toArray(): array
    {
        return get_object_vars($this);
    }
}
