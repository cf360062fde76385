<?php

declare(strict_types=1);

namespace Dlock;

/**
 * What Store::status() and Store::list() report about one name (a copy of
 * libdlock's dlock_info).  Times are in seconds.
 */
final class LockInfo
{
    public function __construct(
        /** The lock name. */
        public readonly string $name,
        /** Someone holds it now. */
        public readonly bool $held,
        /** The current holders hold it shared. */
        public readonly bool $shared,
        /** Number of current holders (> 1 only for shared locks and semaphores). */
        public readonly int $holders,
        /** Highest fence handed out for the name so far (0 if unknown); int|string as Lock::fence(). */
        public readonly int|string $fence,
        /** Lease left of the holder that expires last, in seconds; null if unknown or not held. */
        public readonly ?float $ttl,
        /** Holder's host name, '' if unknown. */
        public readonly string $host,
        /** Holder's process id, null if unknown. */
        public readonly ?int $pid,
        /** When the holder acquired it, Unix time in seconds; null if unknown. */
        public readonly ?float $since,
        /** Held by a client that is not dlock (plain GET_LOCK, advisory lock, SET NX). */
        public readonly bool $otherClient,
        /** The limit its holders asked (1: a lock, N: a semaphore); 0 when free or unknown. */
        public readonly int $limit,
        /** A holder that is not dlock (otherClient), on PostgreSQL and MariaDB/MySQL: its session's id, 0 if unknown. */
        public readonly int $clientId = 0,
        /** Its login as the server shows it, '' if it does not. */
        public readonly string $clientUser = '',
        /** Its client's address as the server shows it, '' if it does not. */
        public readonly string $clientAddr = ''
    ) {
    }

    /** @internal from a dlock_info (lent by the library: copied at once) */
    public static function fromC($i): self
    {
        return new self(
            \FFI::string($i->name),
            $i->held !== 0,
            $i->shared !== 0,
            (int) $i->holders,
            Ffi::u64($i->fence),
            $i->ttl_ms < 0 ? null : $i->ttl_ms / 1000.0,
            \FFI::string($i->host),
            $i->pid === 0 ? null : (int) $i->pid,
            $i->since_ms === 0 ? null : $i->since_ms / 1000.0,
            $i->other_client !== 0,
            (int) $i->limit,
            (int) $i->client_id,
            \FFI::string($i->client_user),
            \FFI::string($i->client_addr)
        );
    }

    /** The fields as an array. */
    public function toArray(): array
    {
        return get_object_vars($this);
    }
}
