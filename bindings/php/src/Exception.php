<?php

declare(strict_types=1);

namespace Dlock;

/**
 * A libdlock call failed.  getCode() is the library's return code (one of
 * the constants below, all negative: DLOCK_EINVAL...); getMessage() is the
 * library's message (dlock_errmsg(), else dlock_strerror()).  Passwords in
 * store URLs never appear: the library redacts them.
 *
 * Subclasses by code: LostException (LOST), ExpiringException (EXPIRING),
 * InvalidArgumentException (EINVAL), UnavailableException (EUNAVAIL),
 * StoreException (ESTORE), NotSupportedException (ENOTSUP).  BUSY is never
 * an exception: Store::lock() returns null.
 */
class Exception extends \RuntimeException
{
    public const OK = 0;
    public const BUSY = -1;
    public const LOST = -2;
    public const EXPIRING = -3;
    public const EINVAL = -4;
    public const EUNAVAIL = -5;
    public const ESTORE = -6;
    public const ENOTSUP = -7;
    public const ENOMEM = -8;
    public const ECANCELED = -9;

    /** The exception for return code $rc, with the thread's library message. */
    public static function fromRc(int $rc, string $context = ''): self
    {
        $msg = Ffi::errmsg();
        if ($msg === '') {
            $msg = Ffi::str(Ffi::get()->dlock_strerror($rc));
        }
        if ($context !== '') {
            $msg = "$context: $msg";
        }
        switch ($rc) {
            case self::LOST:
                return new LostException($msg, $rc);
            case self::EXPIRING:
                return new ExpiringException($msg, $rc);
            case self::EINVAL:
                return new InvalidArgumentException($msg, $rc);
            case self::EUNAVAIL:
                return new UnavailableException($msg, $rc);
            case self::ESTORE:
                return new StoreException($msg, $rc);
            case self::ENOTSUP:
                return new NotSupportedException($msg, $rc);
            default:
                return new self($msg, $rc);
        }
    }
}
