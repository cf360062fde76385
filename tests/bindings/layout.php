<?php
// The layout of the structures bindings/php/src/Ffi.php declares, as PHP's
// FFI computes it from the binding's cdef, in tests/bindings/layout.c's
// format (test_layout.sh compares the two).  Needs DLOCK_LIBRARY: the
// cdef is loaded against libdlock, as the binding loads it.

declare(strict_types=1);

require $argv[1] . '/autoload.php'; // bindings/php

$ffi = \Dlock\Ffi::get();
printf("const options_version %d\n", \Dlock\Ffi::OPTIONS_VERSION);
foreach (['dlock_options', 'dlock_info', 'dlock_run_rule', 'dlock_run', 'dlock_suspension'] as $t) {
    $type = $ffi->type($t);
    printf("struct %s %d\n", $t, \FFI::sizeof($type));
    foreach ($type->getStructFieldNames() as $f) {
        printf("field %s %s %d %d\n", $t, $f, $type->getStructFieldOffset($f),
               $type->getStructFieldType($f)->getSize());
    }
}
