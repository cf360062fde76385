/*
 * version.c - the version the header promises and the one the library
 * reports are the build's (CMake's project(VERSION), passed in as
 * DLOCK_PROJECT_VERSION*): prints dlock_version() for test_version.sh and
 * exits non-zero on a disagreement.
 */
#include <stdio.h>
#include <string.h>

#include <dlock.h>

#define STR_(x) #x
#define STR(x) STR_(x)

int main(void)
{
    int bad = 0;

    if (DLOCK_VERSION_MAJOR != DLOCK_PROJECT_VERSION_MAJOR ||
        DLOCK_VERSION_MINOR != DLOCK_PROJECT_VERSION_MINOR ||
        DLOCK_VERSION_PATCH != DLOCK_PROJECT_VERSION_PATCH) {
        fprintf(stderr,
                "dlock.h: DLOCK_VERSION_MAJOR/MINOR/PATCH %d.%d.%d, the "
                "build (CMakeLists.txt project()) is %s\n",
                DLOCK_VERSION_MAJOR, DLOCK_VERSION_MINOR, DLOCK_VERSION_PATCH,
                DLOCK_PROJECT_VERSION);
        bad = 1;
    }
    if (strcmp(DLOCK_VERSION_STRING, DLOCK_PROJECT_VERSION) != 0) {
        fprintf(stderr,
                "dlock.h: DLOCK_VERSION_STRING \"%s\", the build is %s\n",
                DLOCK_VERSION_STRING, DLOCK_PROJECT_VERSION);
        bad = 1;
    }
    if (strcmp(STR(DLOCK_VERSION_MAJOR) "." STR(DLOCK_VERSION_MINOR) "." STR(
                   DLOCK_VERSION_PATCH),
               DLOCK_VERSION_STRING) != 0) {
        fprintf(stderr,
                "dlock.h: DLOCK_VERSION_STRING \"%s\" is not "
                "MAJOR.MINOR.PATCH\n",
                DLOCK_VERSION_STRING);
        bad = 1;
    }
    if (strcmp(dlock_version(), DLOCK_PROJECT_VERSION) != 0) {
        fprintf(stderr, "dlock_version() says \"%s\", the build is %s\n",
                dlock_version(), DLOCK_PROJECT_VERSION);
        bad = 1;
    }
    printf("%s\n", dlock_version());
    return bad;
}
