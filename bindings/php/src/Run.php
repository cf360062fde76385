<?php

declare(strict_types=1);

namespace Dlock;

/**
 * One recorded run of a name (a copy of libdlock's dlock_run): what
 * Store::history(), Store::lastRuns() and Lock::runBegin() report.  Times
 * are Unix times in seconds on the store's clock (SQLite: the host's).
 */
final class Run
{
    /** Still running (its holder has not recorded an end). */
    public const RUNNING = 0;
    /** The job ended; $status is its exit status (0: success). */
    public const EXITED = 1;
    /** The job died of signal $status. */
    public const SIGNALED = 2;
    /** The lock was lost while it ran ($status: what it ended with, or -1). */
    public const LOST = 3;
    /** Its holder went away without recording an end (set when a later run began). */
    public const ABANDONED = 4;
    /** Stopped by its time limit (dlock run --max-runtime; $status: what it ended with). */
    public const TIMEDOUT = 5;
    /**
     * Never a stored run: Lock::runBegin()'s $last when it skipped because
     * the name is suspended (Store::suspend()): $host is who suspended it,
     * $start since when; $fence and $pid 0, $end null, $status -1.
     */
    public const SUSPENDED = 6;
    /** How many runs the store keeps per name (DLOCK_RUNS_KEPT) unless Store::keepRuns() says otherwise. */
    public const KEPT = 20;
    /** The most runs Store::keepRuns() lets a name keep (DLOCK_RUNS_KEPT_MAX). */
    public const KEPT_MAX = 10000;

    private const NAMES = [
        self::RUNNING => 'running', self::EXITED => 'exited',
        self::SIGNALED => 'signaled', self::LOST => 'lost',
        self::ABANDONED => 'abandoned', self::TIMEDOUT => 'timedout',
        self::SUSPENDED => 'suspended',
    ];

    public function __construct(
        /** The lock name. */
        public readonly string $name,
        /** The fence of the lock the run held: it identifies the run; int|string as Lock::fence(). */
        public readonly int|string $fence,
        /** Host name of the run's holder. */
        public readonly string $host,
        /** Process id of the run's holder. */
        public readonly int $pid,
        /** When it started. */
        public readonly float $start,
        /** When it ended; null while running or when abandoned. */
        public readonly ?float $end,
        /** One of RUNNING, EXITED, SIGNALED, LOST, ABANDONED, TIMEDOUT; SUSPENDED for a skip of a suspended name. */
        public readonly int $result,
        /** Exit status (EXITED), signal (SIGNALED), or -1. */
        public readonly int $status
    ) {
    }

    /** "running", "exited", "signaled", "lost", "abandoned", "timedout" or "suspended". */
    public function resultName(): string
    {
        return self::NAMES[$this->result] ?? "result {$this->result}";
    }

    /** True for a run that exited with status 0. */
    public function succeeded(): bool
    {
        return $this->result === self::EXITED && $this->status === 0;
    }

    /** @internal a result given as a constant or its name */
    public static function resultCode(int|string $result): int
    {
        if (is_int($result)) {
            return $result;
        }
        $code = array_search($result, self::NAMES, true);
        if ($code === false) {
            throw new InvalidArgumentException("bad run result \"$result\": exited, signaled or lost", Exception::EINVAL);
        }
        return $code;
    }

    /** @internal from a dlock_run (lent by the library: copied at once) */
    public static function fromC($r): self
    {
        return new self(
            \FFI::string($r->name),
            Ffi::u64($r->fence),
            \FFI::string($r->host),
            (int) $r->pid,
            $r->start_ms / 1000.0,
            $r->end_ms > 0 ? $r->end_ms / 1000.0 : null,
            (int) $r->result,
            (int) $r->status
        );
    }

    /** The fields as an array (with 'resultName'). */
    public function toArray(): array
    {
        return get_object_vars($this) + ['resultName' => $this->resultName()];
    }
}
