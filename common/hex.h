#ifndef COMMON_HEX_H
#define COMMON_HEX_H

/* The value of hexadecimal digit c (either case), or -1. */
int hex_digit(int c);

/*
 * Writes the 16 bytes b as a UUID ("8-4-4-4-12" lower-case hex digits and
 * a NUL) with the version 4 and variant bits set: random bytes in, a
 * random UUID out.
 */
void hex_uuid(unsigned char b[16], char out[37]);

#endif
