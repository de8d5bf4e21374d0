/* main.c: the braid command line (run, info, check, plan, bench). */
#include <stdio.h>
#include "braid.h"
int main(int argc, char **argv) { (void)argc; (void)argv; printf("braid %s\n", braid_version()); return 0; }
