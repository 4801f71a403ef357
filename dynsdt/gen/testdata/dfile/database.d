/* ----------
 *	Probes of a database server, in the shape of PostgreSQL's
 *	src/backend/utils/probes.d: project type names made with object-like
 *	macros (bool itself is redefined), tab indentation, blank lines between
 *	groups, and up to eight arguments.
 * ----------
 */

/*
 * Type names used by the probes below. System typedefs are avoided on
 * purpose, as the original does for portability.
 */
#define TxnId unsigned int
#define LockKind int
#define LOCKLEVEL int
#define PageNo unsigned int
#define RelId unsigned int
#define ForkKind int
#define bool unsigned char

provider dbserver {

	probe txn__begin(TxnId);
	probe txn__commit(TxnId);
	probe txn__abort(TxnId);

	probe latch__acquire(const char *, LockKind);
	probe latch__release(const char *);
	probe latch__wait__start(const char *, LockKind);
	probe latch__wait__done(const char *, LockKind);
	probe latch__try__acquire(const char *, LockKind);
	probe latch__try__acquire__fail(const char *, LockKind);

	probe lock__wait__start(unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, LOCKLEVEL);
	probe lock__wait__done(unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, LOCKLEVEL);

	probe stmt__parse__start(const char *);
	probe stmt__parse__done(const char *);
	probe stmt__execute__start();
	probe stmt__execute__done();

	probe sort__start(int, bool, int, int, bool, int);
	probe sort__done(bool, long);

	probe page__read__start(ForkKind, PageNo, RelId, RelId, RelId, int, bool);
	probe page__read__done(ForkKind, PageNo, RelId, RelId, RelId, int, bool, bool);
	probe page__flush__start(ForkKind, PageNo, RelId, RelId, RelId);
	probe page__sync__written(int);

	probe deadlock__found();

	probe checkpoint__start(int);
	probe checkpoint__done(int, int, int, int, int);

	probe log__insert(unsigned char, unsigned char);
	probe log__switch();
	probe log__buffer__write__dirty__start();
	probe log__buffer__write__dirty__done();
};
