/* The object between the caller and the program, as the Level Zero loader
 * is: linked with DT_RPATH $ORIGIN and DT_NEEDED on chain_b.c's object. */
void *zc_chain_dlopen(const char *name);
void *zc_chain_a_dlopen(const char *name);

void *zc_chain_a_dlopen(const char *name)
{
    return zc_chain_dlopen(name);
}
