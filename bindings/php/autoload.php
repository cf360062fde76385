<?php

// Autoloader for the dlock PHP binding without composer:
//     require '/path/to/bindings/php/autoload.php';
spl_autoload_register(static function (string $class): void {
    if (strncmp($class, 'Dlock\\', 6) !== 0) {
        return;
    }
    $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, 6)) . '.php';
    if (is_file($file)) {
        require $file;
    }
});
