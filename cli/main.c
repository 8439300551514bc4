/* placeholder until the CLI lands */
#include "blockflow.h"
#include <stdio.h>
int main(void) { printf("blockflow %s\n", BF_VERSION_STRING); return 0; }
