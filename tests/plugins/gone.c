/*
 * Test library that the needlib plugin links against.  It is built with the
 * soname libcpgone-missing.so.0, a file that exists nowhere, so the plugin
 * fails to load with the dynamic linker's "cannot open shared object file"
 * message, as a backend whose library (libnccl, libfabric) is missing on a
 * node would.
 */
int cp_gone_answer(void);
int cp_gone_answer(void)
{
    return 42;
}
