<?php

// Optional: make the class names of its-mieger/mysql-shared-locks name the
// dlock facade, so an application that removed that package runs
// unchanged (its `use ItsMieger\MySqlSharedLocks\...` lines and its
// `catch (ItsMieger\...\SharedLockTimeoutException $e)` blocks too):
//
//     require '/path/to/dlock/bindings/php/autoload.php';     // or composer's
//     require '/path/to/dlock/bindings/php/compat-aliases.php';
//     ItsMieger\MySqlSharedLocks\SharedLock::setStoreUrl('mysql://...');
//
// The aliases are made at once (a `catch` never autoloads the class it
// names).  A class the original package still provides (it is installed
// and autoloadable) is left alone: then the two libraries coexist.
(static function (): void {
    foreach ([
        'SharedLock',
        'SharedLockHandle',
        'Exception\\SharedLockException',
        'Exception\\SharedLockAcquireException',
        'Exception\\SharedLockTimeoutException',
        'Exception\\SharedLockReleaseException',
        'Exception\\SharedLockRemainingTTLException',
        'Exception\\TableRepairException',
    ] as $c) {
        $orig = 'ItsMieger\\MySqlSharedLocks\\' . $c;
        if (!class_exists($orig)) {
            class_alias('Dlock\\Compat\\' . $c, $orig);
        }
    }
})();
