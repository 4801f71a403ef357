/* Every C type ParseD maps, one probe per group; the expected ArgTypes are
 * in dfile_test.go. Two providers in one file. */
provider types {
	probe strings(char *, const char *, char const *p, const char * const q, string s);
	probe int8(char, signed char, int8_t);
	probe uint8(unsigned char, uint8_t);
	probe int16(short, short int, signed short, int16_t);
	probe uint16(unsigned short, unsigned short int, uint16_t);
	probe int32(int, signed, signed int, int32_t, enum color);
	probe uint32(unsigned, unsigned int, uint32_t);
	probe int64(long, long int, long long, signed long long int, int64_t, ssize_t, intptr_t);
	probe uint64(unsigned long, unsigned long long, uint64_t, size_t, uintptr_t);
	probe bools(bool, _Bool);
	probe pointers(void *, struct foo *, uint8_t *, unsigned char *, char **, int *, const void * const, signed char *);
};

provider empty {
	probe none(void);
};
