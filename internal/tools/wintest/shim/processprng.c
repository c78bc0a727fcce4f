/*
 * processprng.c: bcryptprimitives.dll for Wine 8, which lacks it. Go 1.22
 * and later call ProcessPrng from it at start-up; this one fills the buffer
 * through RtlGenRandom (advapi32's SystemFunction036). plugkit's own source,
 * used only by `make test-windows` (internal/tools/wintest); never shipped.
 *
 * Build: x86_64-w64-mingw32-gcc -shared -o bcryptprimitives.dll \
 *        processprng.c -ladvapi32
 */
#include <windows.h>
#include <ntsecapi.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
		if (!RtlGenRandom(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
