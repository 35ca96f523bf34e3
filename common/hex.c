#include "common/hex.h"
#include "common/banned.h"

int hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void hex_uuid(unsigned char b[16], char out[37])
{
	static const char hex[] = "0123456789abcdef";
	int i, j = 0;

	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[j++] = '-';
		out[j++] = hex[b[i] >> 4];
		out[j++] = hex[b[i] & 15];
	}
	out[j] = '\0';
}
