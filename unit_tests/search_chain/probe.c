/* A compiler-like library (SONAME libzc_probe.so.1) that the search tests
 * place where the dynamic linker looks, as IGC would be. */
int zc_probe_value(void);

int zc_probe_value(void)
{
    return 1;
}
