<?php

declare(strict_types=1);

// The other process of the binding's tests.  Reads one command a line from
// stdin, answers one line on stdout:
//   lock NAME [WAIT [TTL]]  -> "got FENCE" | "busy" | "error CLASS MESSAGE"
//   release NAME            -> "released" | "error CLASS MESSAGE"
//   force NAME              -> "removed N"  (Store::forceRelease)
//   flock NAME TIMEOUT TTL  -> facade SharedLock::lock: "got FENCE" | "timeout" | "error ..."
//   funlock NAME            -> facade unlock: "released" | "error ..."
//   elect NAME VALUE [WAIT] -> "leading FENCE" | "busy" | "error CLASS MESSAGE"
//   proclaim NAME VALUE     -> "proclaimed" | "error CLASS MESSAGE"
//   exit CODE               -> exit(CODE) at once, locks still held
// End of input: the script ends with what it holds (released then).

require __DIR__ . '/../autoload.php';

use Dlock\Compat\SharedLock;
use Dlock\Compat\Exception\SharedLockTimeoutException;

$store = new Dlock\Store(getenv('DLOCK_TEST_URL'));
$locks = [];
$handles = [];
if (getenv('DLOCK_TEST_COMPAT_URL')) {
    SharedLock::setStoreUrl(getenv('DLOCK_TEST_COMPAT_URL'));
}
echo "ready\n";
while (($line = fgets(STDIN)) !== false) {
    $a = explode(' ', trim($line));
    try {
        switch ($a[0]) {
            case 'lock':
                $l = $store->lock($a[1], isset($a[2]) ? (float) $a[2] : 0, isset($a[3]) ? (float) $a[3] : 30);
                if ($l === null) {
                    echo "busy\n";
                } else {
                    $locks[$a[1]] = $l;
                    echo "got {$l->fence()}\n";
                }
                break;
            case 'release':
                $l = $locks[$a[1]];
                unset($locks[$a[1]]);
                $l->release();
                echo "released\n";
                break;
            case 'force':
                echo 'removed ' . $store->forceRelease($a[1]) . "\n";
                break;
            case 'flock':
                try {
                    $h = SharedLock::lock($a[1], (float) $a[2], (int) $a[3]);
                    $handles[$a[1]] = $h;
                    echo "got {$h->fence()}\n";
                } catch (SharedLockTimeoutException $e) {
                    echo "timeout\n";
                }
                break;
            case 'funlock':
                $handles[$a[1]]->release();
                unset($handles[$a[1]]);
                echo "released\n";
                break;
            case 'elect':
                $l = $store->elect($a[1], $a[2], isset($a[3]) ? (float) $a[3] : null);
                if ($l === null) {
                    echo "busy\n";
                } else {
                    $locks[$a[1]] = $l;
                    echo "leading {$l->fence()}\n";
                }
                break;
            case 'proclaim':
                $locks[$a[1]]->proclaim($a[2]);
                echo "proclaimed\n";
                break;
            case 'exit':
                exit((int) $a[1]);
            default:
                echo "error unknown command\n";
        }
    } catch (Throwable $e) {
        echo 'error ' . get_class($e) . ' ' . str_replace("\n", ' ', $e->getMessage()) . "\n";
    }
}
