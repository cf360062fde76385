<?php

declare(strict_types=1);

namespace Dlock\Compat;

use Dlock\Compat\Exception\SharedLockAcquireException;
use Dlock\Compat\Exception\SharedLockException;
use Dlock\Compat\Exception\SharedLockReleaseException;
use Dlock\Compat\Exception\SharedLockRemainingTTLException;
use Dlock\Compat\Exception\SharedLockTimeoutException;
use Dlock\Exception as DlockException;
use Dlock\Lock;
use Dlock\Store;

/**
 * Drop-in replacement for its-mieger/mysql-shared-locks'
 * ItsMieger\MySqlSharedLocks\SharedLock, on libdlock.
 *
 * Same static API, same exceptions (in Dlock\Compat\Exception), same
 * `shared_locks` table, so processes still using the original library
 * and processes using this one exclude each other.  What changes:
 *  - libdlock's own thread renews the lease (every third of the TTL) while
 *    the lock is held, also while PHP is busy (setAutoRenew(false) for the
 *    original's fixed TTL);
 *  - a holder past its TTL is taken over for real (the original's KILL
 *    compares IS_USED_LOCK() with 1 and almost never runs);
 *  - every lock has a fence: SharedLockHandle::fence().
 *
 * Configure it with a dlock store URL (setStoreUrl(), any dlock store
 * works; only mysql://, mariadb:// share the table with the original), or
 * as before with configureConnection().  setConnection(PDO) is not
 * possible: libdlock keeps each lock on its own connection, which is what
 * makes locks independent of the application's transactions.
 */
class SharedLock
{
    const QUOTE_STYLE_DEFAULT = 0;
    const QUOTE_STYLE_ANSI = 1;

    /** The lock table (the store URL's ?table=, default `shared_locks`). */
    protected static $locks_table = 'shared_locks';

    protected static $quoteStyle = self::QUOTE_STYLE_DEFAULT;

    /** @var string|null URL given to setStoreUrl() or built by configureConnection() */
    protected static $storeUrl = null;

    protected static $autoRenew = true;

    /** @var Store|null */
    protected static $store = null;

    /** @var array<string, Lock> the locks this process holds, by name */
    protected static $locks = [];

    /**
     * Use the dlock store at $url (e.g. "mysql://user:pw@db:3306/app"; add
     * "?table=..." for another table than `shared_locks`).  The password
     * never appears in messages.
     */
    public static function setStoreUrl(string $url): void
    {
        static::$storeUrl = $url;
        static::$store = null;
    }

    /** The store URL in use, password replaced by "***". */
    public static function getStoreUrl(): string
    {
        return static::store()->url();
    }

    /**
     * Configure the database connection, as the original does.  $charset
     * is ignored (dlock speaks utf8mb4); $additionalDsn may carry
     * "unix_socket=/path" (other DSN options are ignored).
     */
    public static function configureConnection($host, $dbName, $username, $password, $charset = 'utf8mb4', $port = null, $additionalDsn = null)
    {
        $url = 'mysql://' . rawurlencode((string) $username);
        if ((string) $password !== '') {
            $url .= ':' . rawurlencode((string) $password);
        }
        $host = (string) $host;
        if (str_contains($host, ':') && $host[0] !== '[') {
            $host = "[$host]";
        }
        $url .= '@' . $host . (!empty($port) ? ':' . (int) $port : '') . '/' . rawurlencode((string) $dbName);
        if (!empty($additionalDsn)) {
            foreach (explode(';', (string) $additionalDsn) as $kv) {
                $kv = explode('=', $kv, 2);
                if (count($kv) === 2 && trim($kv[0]) === 'unix_socket') {
                    $url .= '?socket=' . rawurlencode(trim($kv[1]));
                }
            }
        }
        static::setStoreUrl($url);
    }

    /**
     * Not possible with dlock: each lock lives on a connection of its own
     * in libdlock.  Use setStoreUrl() or configureConnection(), and
     * SharedLockHandle::assertTTL() or the fence (SharedLockHandle::fence())
     * where the original relied on the shared connection.
     * @throws \BadMethodCallException always
     */
    public static function setConnection(\PDO $pdo)
    {
        throw new \BadMethodCallException('Dlock\Compat\SharedLock cannot share a PDO connection: use setStoreUrl() or configureConnection()');
    }

    /**
     * @throws \BadMethodCallException always (see setConnection())
     */
    public static function getConnection()
    {
        throw new \BadMethodCallException('Dlock\Compat\SharedLock has no PDO connection: libdlock keeps one per lock');
    }

    /**
     * Sets the identifier quote style: QUOTE_STYLE_ANSI for servers in
     * ANSI_QUOTES mode (the store URL gets "quote=ansi").
     * @throws \InvalidArgumentException an unknown style
     */
    public static function setQuoteStyle($quoteStyle)
    {
        if ($quoteStyle !== self::QUOTE_STYLE_DEFAULT && $quoteStyle !== self::QUOTE_STYLE_ANSI) {
            throw new \InvalidArgumentException("Invalid quote style \"$quoteStyle\"");
        }
        static::$quoteStyle = $quoteStyle;
        static::$store = null;
    }

    /** The table which holds the locks. */
    public static function getTable()
    {
        return static::$locks_table;
    }

    /**
     * true (default): libdlock renews each lock's lease while it is held;
     * false: the lease is the TTL given to lock(), as in the original.
     */
    public static function setAutoRenew(bool $autoRenew): void
    {
        static::$autoRenew = $autoRenew;
    }

    /**
     * Acquire a named lock.
     * @param string $name    The lock name
     * @param float  $timeout The timeout for acquiring, in seconds (0: try once)
     * @param int    $ttl     The lease in seconds; renewed while held unless
     *                        setAutoRenew(false)
     * @return SharedLockHandle
     * @throws SharedLockTimeoutException not acquired within $timeout
     * @throws SharedLockAcquireException any other failure (getPrevious():
     *         the Dlock\Exception with libdlock's code and message)
     */
    public static function lock($name, $timeout, $ttl)
    {
        $name = (string) $name;
        try {
            $lock = static::store()->lock($name, wait: max(0.0, (float) $timeout), ttl: (float) $ttl, autoRenew: static::$autoRenew);
        } catch (DlockException $ex) {
            throw new SharedLockAcquireException($name, $ex->getMessage(), 0, $ex);
        }
        if ($lock === null) {
            throw new SharedLockTimeoutException($name, $timeout);
        }
        if (isset(static::$locks[$name])) {
            // Two handles of one name cannot both be held (the store
            // refuses): the old one is gone; let it go quietly.
            try {
                static::$locks[$name]->release();
            } catch (DlockException $ignored) {
            }
        }
        static::$locks[$name] = $lock;
        return new SharedLockHandle($name);
    }

    /**
     * Release the named lock.
     * @throws SharedLockReleaseException it was not held (any more) by this
     *         process, or the store could not be told
     */
    public static function unlock($name)
    {
        $name = (string) $name;
        $lock = static::$locks[$name] ?? null;
        unset(static::$locks[$name]);
        if ($lock === null) {
            throw new SharedLockReleaseException($name);
        }
        try {
            $lock->release();
        } catch (DlockException $ex) {
            throw new SharedLockReleaseException($name, '', 0, $ex);
        }
    }

    /**
     * Check that this process still holds the lock with at least
     * $minRemainingTTL seconds of lease left (asked of the store).
     * @throws SharedLockRemainingTTLException not held, lost, or less left
     */
    public static function assertTTL($name, $minRemainingTTL = 1)
    {
        $name = (string) $name;
        $lock = static::$locks[$name] ?? null;
        if ($lock === null) {
            throw new SharedLockRemainingTTLException($name, $minRemainingTTL);
        }
        try {
            $lock->assertTtl((float) $minRemainingTTL);
        } catch (DlockException $ex) {
            throw new SharedLockRemainingTTLException($name, $minRemainingTTL, '', 0, $ex);
        }
    }

    /**
     * The Dlock\Lock behind a held name (fence, isLost(), extend()...).
     * @throws SharedLockException not held by this process
     */
    public static function getLock($name): Lock
    {
        $name = (string) $name;
        if (!isset(static::$locks[$name])) {
            throw new SharedLockException($name, "Lock \"$name\" is not held by this process");
        }
        return static::$locks[$name];
    }

    /** The Dlock\Store, opened on first use. */
    protected static function store(): Store
    {
        if (static::$store === null) {
            $url = static::$storeUrl;
            if ($url === null) {
                throw new SharedLockException('', 'Dlock\Compat\SharedLock: no store configured (setStoreUrl() or configureConnection())');
            }
            $params = (string) parse_url($url, PHP_URL_QUERY);
            $add = [];
            if (static::$quoteStyle === self::QUOTE_STYLE_ANSI && !preg_match('/(^|&)quote=/', $params)) {
                $add[] = 'quote=ansi';
            }
            if (static::$locks_table !== 'shared_locks' && !preg_match('/(^|&)table=/', $params)) {
                $add[] = 'table=' . rawurlencode(static::$locks_table);
            }
            if ($add) {
                $url .= (str_contains($url, '?') ? '&' : '?') . implode('&', $add);
            }
            try {
                static::$store = new Store($url);
            } catch (DlockException $ex) {
                throw new SharedLockException('', $ex->getMessage(), 0, $ex);
            }
        }
        return static::$store;
    }
}
