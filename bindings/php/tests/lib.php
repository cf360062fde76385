<?php

declare(strict_types=1);

// Shared helpers of the binding's tests: plain asserting scripts, one line
// per check, exit status 1 if any check failed.

require __DIR__ . '/../autoload.php';

final class T
{
    public static int $failed = 0;
    public static int $passed = 0;
    public static string $tag = '';

    public static function ok(bool $cond, string $what, string $detail = ''): bool
    {
        if ($cond) {
            self::$passed++;
            echo "ok   " . self::$tag . " $what\n";
        } else {
            self::$failed++;
            echo "FAIL " . self::$tag . " $what" . ($detail !== '' ? " -- $detail" : '') . "\n";
        }
        return $cond;
    }

    /** Run $fn, expecting an exception of class $class; returns it (or null). */
    public static function throws(string $class, callable $fn, string $what): ?\Throwable
    {
        try {
            $fn();
        } catch (\Throwable $e) {
            self::ok($e instanceof $class, $what, 'got ' . get_class($e) . ': ' . $e->getMessage());
            return $e;
        }
        self::ok(false, $what, "no $class thrown");
        return null;
    }

    /** Run a block of checks; an unexpected exception fails it instead of ending the script. */
    public static function block(string $what, callable $fn): void
    {
        try {
            $fn();
        } catch (\Throwable $e) {
            self::ok(false, "$what: unexpected " . get_class($e), $e->getMessage() . ' at ' . $e->getFile() . ':' . $e->getLine());
        }
    }

    public static function done(): never
    {
        echo "# " . self::$tag . " " . self::$passed . " passed, " . self::$failed . " failed\n";
        exit(self::$failed === 0 ? 0 : 1);
    }

    /** A lock name no other run uses. */
    public static function name(string $what): string
    {
        static $run = null;
        $run ??= 'php-' . getmypid() . '-' . bin2hex(random_bytes(3));
        return "$run-$what";
    }

    /** $a > $b for fences (int, or decimal string above PHP_INT_MAX). */
    public static function fenceGt(int|string $a, int|string $b): bool
    {
        $a = (string) $a;
        $b = (string) $b;
        return strlen($a) !== strlen($b) ? strlen($a) > strlen($b) : strcmp($a, $b) > 0;
    }
}

/**
 * A helper process (tests/child.php) spoken to through pipes: each command
 * is one line, each answer one line; the answers are the barriers (no
 * sleeps for synchronisation).
 */
final class Child
{
    /** @var resource */
    private $proc = null;
    private array $pipes = [];

    public function __construct(string $url, array $extraEnv = [])
    {
        $cmd = [PHP_BINARY];
        foreach (['ffi.enable'] as $ini) {
            $v = ini_get($ini);
            if ($v !== false) {
                $cmd[] = '-d';
                $cmd[] = "$ini=$v";
            }
        }
        $cmd[] = __DIR__ . '/child.php';
        $env = getenv();
        $env['DLOCK_TEST_URL'] = $url;
        $env = array_merge($env, $extraEnv);
        $this->proc = proc_open($cmd, [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => STDERR], $this->pipes, null, $env);
        if (!is_resource($this->proc)) {
            throw new RuntimeException('cannot start tests/child.php');
        }
        $hello = $this->read(20);
        if ($hello !== 'ready') {
            throw new RuntimeException("child did not start: '$hello'");
        }
    }

    /** Send a command line without waiting for the answer. */
    public function send(string $line): void
    {
        fwrite($this->pipes[0], $line . "\n");
        fflush($this->pipes[0]);
    }

    /** The next answer line ('' on EOF or after $timeout seconds: a hung child fails the test, not the run). */
    public function read(float $timeout = 30): string
    {
        $r = [$this->pipes[1]];
        $w = $e = null;
        $sec = (int) $timeout;
        if (stream_select($r, $w, $e, $sec, (int) (($timeout - $sec) * 1e6)) < 1) {
            return '';
        }
        $line = fgets($this->pipes[1]);
        return $line === false ? '' : rtrim($line, "\n");
    }

    public function ask(string $line, float $timeout = 30): string
    {
        $this->send($line);
        return $this->read($timeout);
    }

    /** Close stdin and wait: the child's exit status. */
    public function close(): int
    {
        if ($this->proc === null) {
            return -1;
        }
        fclose($this->pipes[0]);
        while (!feof($this->pipes[1]) && fgets($this->pipes[1]) !== false) {
        }
        fclose($this->pipes[1]);
        $rc = proc_close($this->proc);
        $this->proc = null;
        return $rc;
    }

    public function __destruct()
    {
        if ($this->proc !== null) {
            proc_terminate($this->proc, 9);
            proc_close($this->proc);
        }
    }
}
