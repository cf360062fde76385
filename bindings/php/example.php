<?php
require __DIR__ . '/autoload.php';   // with composer: require 'vendor/autoload.php';
$store = new Dlock\Store('sqlite:///tmp/dlock-example.db');   // or redis://, postgres://, mysql://
$lock = $store->lock('nightly-report', wait: 10, ttl: 30) ?? exit("someone else has it\n");
echo "holding nightly-report with fence {$lock->fence()}\n";   // renewed by libdlock meanwhile
$lock->release();
