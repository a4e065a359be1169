// rawstored, the broker daemon (docs/swift.md): the daemon runs as a child
// on a file-backed store and is spoken to through broker_client.h, as a
// Swift process would.
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "broker_client.h"
#include "helpers.h"

static std::string str(const struct rsbc_buf &b)
{
	return std::string(reinterpret_cast<const char *>(b.p), b.len);
}

class BrokerTest : public ::testing::Test {
protected:
	TempDir tmp;
	std::string dev, meta, sock, log;
	pid_t pid = -1;

	void SetUp() override
	{
		dev = tmp.path + "/dev";
		meta = tmp.path + "/meta";
		sock = tmp.path + "/broker.sock";
		log = tmp.path + "/log";
		ASSERT_EQ(make_file(dev, 256ULL << 20), 0);
		struct rawstore_mkfs_opts mo;
		test_mkfs_opts_init(&mo);
		mo.zero_policy = RAWSTORE_ZERO_PAD;
		ASSERT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), 0) << rawstore_errmsg();
		ASSERT_EQ(Start(), 0) << Log();
	}
	void TearDown() override
	{
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, nullptr, 0);
		}
	}
	std::string Log()
	{
		std::ifstream f(log);
		std::stringstream s;
		s << f.rdbuf();
		return s.str();
	}
	/* Run rawstored with @args; its stderr goes to the log. */
	pid_t Spawn(const std::vector<std::string> &args)
	{
		pid_t p = fork();
		if (p == 0) {
			int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
			dup2(fd, 2);
			std::vector<char *> av;
			av.push_back(const_cast<char *>(RAWSTORED));
			for (auto &a : args)
				av.push_back(const_cast<char *>(a.c_str()));
			av.push_back(nullptr);
			execv(RAWSTORED, av.data());
			_exit(127);
		}
		return p;
	}
	std::string StoreArg(const std::string &s) { return "s:" + dev + ":" + meta + ":" + s; }
	/* Start the daemon and wait until it answers: 0, or its exit status. */
	int Start(std::vector<std::string> extra = {})
	{
		extra.push_back("--store");
		extra.push_back(StoreArg(sock));
		pid = Spawn(extra);
		for (int i = 0; i < 1000; i++) {
			int st, fd = rsbc_connect(sock.c_str());
			if (fd >= 0) {
				close(fd);
				return 0;
			}
			if (waitpid(pid, &st, WNOHANG) == pid) {
				pid = -1;
				return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			}
			usleep(10000);
		}
		return -1;
	}
	/* Signal the daemon, return its exit status (128 + signal if killed). */
	int Stop(int sig)
	{
		int st;
		kill(pid, sig);
		EXPECT_EQ(waitpid(pid, &st, 0), pid);
		pid = -1;
		return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	int Conn()
	{
		int fd = rsbc_connect(sock.c_str());
		uint16_t v = 0;
		EXPECT_GE(fd, 0);
		EXPECT_EQ(rsbc_hello(fd, 1, 1, &v), 0);
		EXPECT_EQ(v, 1);
		return fd;
	}
	/* Submit @b (records); the result, and the failed op in *@failed. */
	static int Txn(int fd, uint32_t nops, const struct rsbc_buf &b, uint32_t *failed = nullptr)
	{
		struct rsbc_buf req = {}, out = {};
		int res = -1;
		rsbc_u32(&req, nops);
		memcpy(rsbc_grow(&req, b.len), b.p, b.len);
		EXPECT_EQ(rsbc_call(fd, RSB_OP_TXN, &req, &res, &out), 0);
		EXPECT_EQ(out.len, 4u);
		if (failed && out.len == 4)
			*failed = rsb_get32(out.p);
		rsbc_free(&req);
		rsbc_free(&out);
		return res;
	}
	static void Obj(struct rsbc_buf *b, uint8_t type, const char *coll, const std::string &n)
	{
		rsbc_u8(b, type);
		rsbc_str16(b, coll);
		rsbc_bytes32(b, n.data(), n.size());
	}
	static void Write(struct rsbc_buf *b, const char *coll, const std::string &n,
			  const std::string &d)
	{
		Obj(b, RSB_T_WRITE, coll, n);
		rsbc_u64(b, 0);
		rsbc_bytes32(b, d.data(), d.size());
	}
	static int Put(int fd, const char *coll, const std::string &n, const std::string &d)
	{
		struct rsbc_buf b = {};
		Write(&b, coll, n, d);
		int r = Txn(fd, 1, b);
		rsbc_free(&b);
		return r;
	}
	static int MkColl(int fd, const char *coll)
	{
		struct rsbc_buf b = {};
		rsbc_u8(&b, RSB_T_COLL_CREATE);
		rsbc_str16(&b, coll);
		int r = Txn(fd, 1, b);
		rsbc_free(&b);
		return r;
	}
	static std::string Read(int fd, const char *coll, const std::string &n, int *res,
				uint64_t len = 64ULL << 20)
	{
		struct rsbc_buf out = {};
		EXPECT_EQ(rsbc_read(fd, coll, n.data(), n.size(), 0, len, res, &out), 0);
		std::string s = str(out);
		rsbc_free(&out);
		return s;
	}
	/* A request on (coll, name) plus @extra, e.g. GETATTR's attribute. */
	static int Ask(int fd, uint16_t op, const char *coll, const std::string &n,
		       std::string *reply, void (*extra)(struct rsbc_buf *, const void *) = nullptr,
		       const void *arg = nullptr)
	{
		struct rsbc_buf b = {}, out = {};
		int res = -1;
		rsbc_str16(&b, coll);
		rsbc_bytes32(&b, n.data(), n.size());
		if (extra)
			extra(&b, arg);
		EXPECT_EQ(rsbc_call(fd, op, &b, &res, &out), 0);
		*reply = str(out);
		rsbc_free(&b);
		rsbc_free(&out);
		return res;
	}
	void ExpectStoreClean()
	{
		struct rawstore *st;
		struct rawstore_open_opts oo;
		rawstore_open_opts_init(&oo);
		ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &oo, &st), 0) << rawstore_errmsg();
		struct rawstore_fsck_opts o;
		struct rawstore_fsck_result r;
		rawstore_fsck_opts_init(&o);
		o.deep = 1;
		r.struct_size = sizeof(r);
		EXPECT_EQ(rawstore_fsck(st, &o, &r), 0);
		EXPECT_EQ(r.errors, 0u);
		EXPECT_EQ(r.leaks, 0u);
		EXPECT_EQ(rawstore_close(st), 0);
	}
};

static void add_str16(struct rsbc_buf *b, const void *s)
{
	rsbc_str16(b, static_cast<const char *>(s));
}

static void add_key(struct rsbc_buf *b, const void *s)
{
	const std::string *k = static_cast<const std::string *>(s);
	rsbc_bytes32(b, k->data(), k->size());
}

TEST_F(BrokerTest, HelloNegotiatesAndRefusesOtherVersions)
{
	uint16_t v = 0;
	int fd = rsbc_connect(sock.c_str());
	ASSERT_GE(fd, 0);
	EXPECT_EQ(rsbc_hello(fd, 1, 5, &v), 0); /* a newer client settles on 1 */
	EXPECT_EQ(v, 1);
	close(fd);

	/* a client that speaks only version 2 and up: refused, then closed */
	fd = rsbc_connect(sock.c_str());
	ASSERT_GE(fd, 0);
	EXPECT_EQ(rsbc_hello(fd, 2, 3, &v), -EPROTONOSUPPORT);
	EXPECT_EQ(v, 1); /* the server's lowest version */
	struct rsb_hdr h = {};
	EXPECT_EQ(rsbc_recv(fd, &h, nullptr), -ECONNRESET);
	close(fd);

	/* a request before HELLO: -EPROTO, closed */
	fd = rsbc_connect(sock.c_str());
	int res = 0;
	EXPECT_EQ(rsbc_call(fd, RSB_OP_STATFS, nullptr, &res, nullptr), 0);
	EXPECT_EQ(res, -EPROTO);
	EXPECT_EQ(rsbc_recv(fd, &h, nullptr), -ECONNRESET);
	close(fd);

	/* after HELLO, a frame of another version: refused, connection kept */
	fd = Conn();
	EXPECT_EQ(rsbc_send(fd, RSB_OP_STATFS, 2, 3, 0, nullptr, 0), 0);
	ASSERT_EQ(rsbc_recv(fd, &h, nullptr), 0);
	EXPECT_EQ(h.result, -EPROTONOSUPPORT);
	EXPECT_EQ(h.tag, 3u);
	struct rsbc_buf out = {};
	EXPECT_EQ(rsbc_call(fd, RSB_OP_STATFS, nullptr, &res, &out), 0);
	EXPECT_EQ(res, 0);
	EXPECT_EQ(out.len, 80u);
	rsbc_free(&out);
	close(fd);
}

TEST_F(BrokerTest, TxnRoundTripsDataAttrsAndOmap)
{
	int fd = Conn(), res;
	const std::string name("obj\0with nul", 12), data = pattern(100000, 3);
	const std::string val("v\0al", 4), key("k\0ey", 4), oval = pattern(3000, 4);
	struct rsbc_buf b = {};

	rsbc_u8(&b, RSB_T_COLL_CREATE);
	rsbc_str16(&b, "c");
	Write(&b, "c", name, data);
	Obj(&b, RSB_T_SETATTR, "c", name);
	rsbc_str16(&b, "user.swift.metadata");
	rsbc_bytes32(&b, val.data(), val.size());
	Obj(&b, RSB_T_OMAP_SET, "c", name);
	rsbc_bytes32(&b, key.data(), key.size());
	rsbc_bytes32(&b, oval.data(), oval.size());
	Obj(&b, RSB_T_TOUCH, "c", "empty");
	uint32_t failed = 0;
	ASSERT_EQ(Txn(fd, 5, b, &failed), 0);
	EXPECT_EQ(failed, RSB_NO_FAILED_OP);
	rsbc_free(&b);

	EXPECT_EQ(Read(fd, "c", name, &res), data);
	EXPECT_EQ(res, 0);
	std::string r;
	EXPECT_EQ(Ask(fd, RSB_OP_GETATTR, "c", name, &r, add_str16, "user.swift.metadata"), 0);
	EXPECT_EQ(r, val);
	EXPECT_EQ(Ask(fd, RSB_OP_GETATTR, "c", name, &r, add_str16, "nope"), -ENODATA);
	EXPECT_EQ(Ask(fd, RSB_OP_OMAP_GET, "c", name, &r, add_key, &key), 0);
	EXPECT_EQ(r, oval);
	EXPECT_EQ(Ask(fd, RSB_OP_STAT, "c", name, &r), 0);
	ASSERT_EQ(r.size(), 40u);
	EXPECT_EQ(rsb_get64(reinterpret_cast<const uint8_t *>(r.data())), data.size());
	EXPECT_EQ(Ask(fd, RSB_OP_STAT, "c", "missing", &r), -ENOENT);

	/* LISTATTR: one (attr, value) */
	ASSERT_EQ(Ask(fd, RSB_OP_LISTATTR, "c", name, &r), 0);
	struct rsb_cur cur = { reinterpret_cast<const uint8_t *>(r.data()), r.size(), 0 };
	EXPECT_EQ(rsb_u32(&cur), 1u);
	char attr[64];
	EXPECT_EQ(rsb_str(&cur, attr, sizeof(attr)), 0);
	EXPECT_STREQ(attr, "user.swift.metadata");
	size_t n;
	const uint8_t *p = rsb_bytes(&cur, &n);
	EXPECT_EQ(std::string(reinterpret_cast<const char *>(p), n), val);

	/* OMAP_LIST from the first key */
	std::string none;
	auto start_max = [](struct rsbc_buf *bb, const void *) {
		rsbc_bytes32(bb, nullptr, 0);
		rsbc_u32(bb, 10);
	};
	ASSERT_EQ(Ask(fd, RSB_OP_OMAP_LIST, "c", name, &r, start_max), 0);
	cur = { reinterpret_cast<const uint8_t *>(r.data()), r.size(), 0 };
	EXPECT_EQ(rsb_u32(&cur), 1u);
	p = rsb_bytes(&cur, &n);
	EXPECT_EQ(std::string(reinterpret_cast<const char *>(p), n), key);

	/* LIST: both names, then only the one after "empty" */
	struct rsbc_buf q = {}, out = {};
	rsbc_str16(&q, "c");
	rsbc_bytes32(&q, nullptr, 0);
	rsbc_u32(&q, 0);
	ASSERT_EQ(rsbc_call(fd, RSB_OP_LIST, &q, &res, &out), 0);
	EXPECT_EQ(res, 0);
	EXPECT_EQ(rsb_get32(out.p), 2u);
	rsbc_free(&q);
	rsbc_free(&out);
	rsbc_str16(&q, "c");
	rsbc_bytes32(&q, "empty", 5);
	rsbc_u32(&q, 0);
	ASSERT_EQ(rsbc_call(fd, RSB_OP_LIST, &q, &res, &out), 0);
	cur = { out.p, out.len, 0 };
	EXPECT_EQ(rsb_u32(&cur), 1u);
	p = rsb_bytes(&cur, &n);
	EXPECT_EQ(std::string(reinterpret_cast<const char *>(p), n), name);
	rsbc_free(&q);
	rsbc_free(&out);

	ASSERT_EQ(rsbc_call(fd, RSB_OP_COLL_LIST, nullptr, &res, &out), 0);
	EXPECT_EQ(res, 0);
	EXPECT_EQ(str(out), std::string("\x01\0\0\0\x01\0c", 7));
	rsbc_free(&out);
	ASSERT_EQ(rsbc_call(fd, RSB_OP_STATFS, nullptr, &res, &out), 0);
	EXPECT_EQ(rsb_get64(out.p + 7 * 8), 2u); /* objects */
	rsbc_free(&out);
	close(fd);
}

TEST_F(BrokerTest, LargeObjectStreamsInAndOut)
{
	int fd = Conn(), res;
	const size_t size = 8u << 20;
	const std::string data = pattern(size, 8);

	ASSERT_EQ(MkColl(fd, "big"), 0);
	struct rsbc_buf b = {};
	rsbc_u32(&b, 2);
	Obj(&b, RSB_T_WRITE_STREAM, "big", "o");
	rsbc_u64(&b, 0);
	rsbc_u64(&b, size);
	Obj(&b, RSB_T_SETATTR, "big", "o");
	rsbc_str16(&b, "etag");
	rsbc_bytes32(&b, "x", 1);
	ASSERT_EQ(rsbc_send(fd, RSB_OP_TXN, 1, 1, 0, b.p, b.len), 0);
	rsbc_free(&b);
	/* chunks of uneven sizes, none over the frame limit */
	for (size_t off = 0, n; off < size; off += n) {
		n = std::min<size_t>(size - off, (off / 4096 % 3 + 1) * 300000);
		ASSERT_EQ(rsbc_send(fd, RSB_OP_WRITE_CHUNK, 1, 2, 0, data.data() + off, n), 0);
	}
	struct rsb_hdr h = {};
	struct rsbc_buf out = {};
	ASSERT_EQ(rsbc_recv(fd, &h, &out), 0);
	EXPECT_EQ(h.result, 0);
	EXPECT_EQ(h.op, RSB_OP_TXN | RSB_REPLY);
	rsbc_free(&out);

	/* read back in frames: count them */
	struct rsbc_buf q = {};
	rsbc_str16(&q, "big");
	rsbc_bytes32(&q, "o", 1);
	rsbc_u64(&q, 0);
	rsbc_u64(&q, 16u << 20); /* more than there is: the last frame is short */
	ASSERT_EQ(rsbc_send(fd, RSB_OP_READ, 1, 5, 0, q.p, q.len), 0);
	rsbc_free(&q);
	int frames = 0;
	do {
		ASSERT_EQ(rsbc_recv(fd, &h, &out), 0);
		ASSERT_GE(h.result, 0);
		EXPECT_LE(h.len, RSB_CHUNK);
		frames++;
	} while (h.flags & RSB_F_MORE);
	EXPECT_EQ(frames, 9); /* 8 full chunks, then an empty one at the end */
	EXPECT_TRUE(str(out) == data);
	rsbc_free(&out);
	/* a range in the middle, across chunk boundaries */
	rsbc_read(fd, "big", "o", 1, (3u << 20) + 5, (1u << 20) + 10, &res, &out);
	EXPECT_EQ(res, 0);
	EXPECT_TRUE(str(out) == data.substr((3u << 20) + 5, (1u << 20) + 10));
	rsbc_free(&out);
	close(fd);
}

TEST_F(BrokerTest, RenameMovesAnObject)
{
	int fd = Conn(), res;
	ASSERT_EQ(MkColl(fd, "tmp"), 0);
	ASSERT_EQ(MkColl(fd, "objects"), 0);
	ASSERT_EQ(Put(fd, "tmp", "upload-1", "payload"), 0);
	struct rsbc_buf b = {};
	Obj(&b, RSB_T_RENAME, "tmp", "upload-1");
	rsbc_str16(&b, "objects");
	rsbc_bytes32(&b, "a/c/o", 5);
	ASSERT_EQ(Txn(fd, 1, b), 0);
	rsbc_free(&b);
	EXPECT_EQ(Read(fd, "objects", "a/c/o", &res), "payload");
	EXPECT_EQ(res, 0);
	Read(fd, "tmp", "upload-1", &res);
	EXPECT_EQ(res, -ENOENT);
	close(fd);
}

TEST_F(BrokerTest, FailedTxnNamesTheOpAndChangesNothing)
{
	int fd = Conn(), res;
	ASSERT_EQ(MkColl(fd, "c"), 0);
	struct rsbc_buf b = {};
	Write(&b, "c", "new", "data");
	Obj(&b, RSB_T_SETATTR, "c", "new");
	rsbc_str16(&b, "a");
	rsbc_bytes32(&b, "1", 1);
	Obj(&b, RSB_T_RMATTR, "c", "new");
	rsbc_str16(&b, "missing");
	Obj(&b, RSB_T_TOUCH, "c", "other");
	uint32_t failed = 0;
	EXPECT_EQ(Txn(fd, 4, b, &failed), -ENODATA);
	EXPECT_EQ(failed, 2u);
	rsbc_free(&b);
	std::string r;
	EXPECT_EQ(Ask(fd, RSB_OP_STAT, "c", "new", &r), -ENOENT);
	EXPECT_EQ(Ask(fd, RSB_OP_STAT, "c", "other", &r), -ENOENT);

	/* a record the builder refuses (empty collection name): its index */
	Obj(&b, RSB_T_TOUCH, "c", "x");
	Obj(&b, RSB_T_TOUCH, "", "y");
	EXPECT_EQ(Txn(fd, 2, b, &failed), -EINVAL);
	EXPECT_EQ(failed, 1u);
	rsbc_free(&b);
	EXPECT_EQ(Ask(fd, RSB_OP_STAT, "c", "x", &r), -ENOENT);
	/* a write to a missing collection, after a streamed write */
	Obj(&b, RSB_T_WRITE_STREAM, "c", "s");
	rsbc_u64(&b, 0);
	rsbc_u64(&b, 10);
	Write(&b, "nocoll", "z", "zz");
	struct rsbc_buf req = {};
	rsbc_u32(&req, 2);
	memcpy(rsbc_grow(&req, b.len), b.p, b.len);
	ASSERT_EQ(rsbc_send(fd, RSB_OP_TXN, 1, 1, 0, req.p, req.len), 0);
	ASSERT_EQ(rsbc_send(fd, RSB_OP_WRITE_CHUNK, 1, 1, 0, "0123456789", 10), 0);
	struct rsb_hdr h = {};
	struct rsbc_buf out = {};
	ASSERT_EQ(rsbc_recv(fd, &h, &out), 0);
	EXPECT_EQ(h.result, -ENOENT);
	EXPECT_EQ(rsb_get32(out.p), 1u);
	rsbc_free(&b);
	rsbc_free(&req);
	rsbc_free(&out);
	EXPECT_EQ(Ask(fd, RSB_OP_STAT, "c", "s", &r), -ENOENT);
	/* the connection is still in step */
	EXPECT_EQ(Put(fd, "c", "ok", "1"), 0);
	EXPECT_EQ(Read(fd, "c", "ok", &res), "1");
	close(fd);
}

/* Send @raw and close the writing side; then read replies until EOF. */
static std::vector<int32_t> garbage(const std::string &path, const std::string &raw,
				    bool hello = true)
{
	std::vector<int32_t> results;
	int fd = rsbc_connect(path.c_str());
	if (fd < 0)
		return { fd };
	if (hello && rsbc_hello(fd, 1, 1, nullptr))
		results.push_back(-1000);
	rsbc_write(fd, raw.data(), raw.size());
	shutdown(fd, SHUT_WR);
	struct rsb_hdr h = {};
	while (!rsbc_recv(fd, &h, nullptr))
		results.push_back(h.result);
	close(fd);
	return results;
}

static std::string frame(uint16_t op, uint32_t len, const std::string &payload, uint16_t v = 1)
{
	uint8_t raw[RSB_HDR_SIZE];
	struct rsb_hdr h = { RSB_MAGIC, v, op, len, 4, 0, 0 };
	rsb_hdr_encode(raw, &h);
	return std::string(reinterpret_cast<char *>(raw), sizeof(raw)) + payload;
}

TEST_F(BrokerTest, GarbageFramesGetAnErrorOrAClosedConnection)
{
	int keep = Conn(), res;
	ASSERT_EQ(MkColl(keep, "c"), 0);

	std::string rnd = pattern(100000, 99);
	for (bool hello : { false, true }) {
		/* -EPROTO, unless the close overtook it (unread data resets) */
		auto r = garbage(sock, rnd, hello);
		EXPECT_TRUE(r.empty() || r == std::vector<int32_t>{ -EPROTO });
	}
	/* truncated: a header promising more than comes, then EOF */
	EXPECT_TRUE(garbage(sock, frame(RSB_OP_STAT, 100, "0123456789")).empty());
	EXPECT_TRUE(garbage(sock, frame(RSB_OP_STAT, 100, "").substr(0, 11)).empty());
	/* a huge length: -EMSGSIZE, then closed without reading it */
	auto r = garbage(sock, frame(RSB_OP_TXN, 0xffffffffu, "abc"));
	EXPECT_EQ(r, std::vector<int32_t>{ -EMSGSIZE });
	/* whole frames that make no sense: an error each, connection kept */
	std::string s;
	s += frame(999, 3, "abc");				/* unknown op */
	s += frame(RSB_OP_STAT, 3, "abc");			/* short payload */
	s += frame(RSB_OP_STAT, 10, std::string("\xff\xff\0\0\0\0\0\0\0\0", 10));
	s += frame(RSB_OP_READ, 0, "");
	s += frame(RSB_OP_STATFS, 0, "");			/* and a good one */
	r = garbage(sock, s);
	EXPECT_EQ(r, (std::vector<int32_t>{ -EOPNOTSUPP, -EPROTO, -EPROTO, -EPROTO, 0 }));
	/* a TXN with an unknown record: -EPROTO and closed (its length is unknown) */
	std::string t("\x02\0\0\0\x63", 5);
	r = garbage(sock, frame(RSB_OP_TXN, (uint32_t)t.size(), t) + frame(RSB_OP_STATFS, 0, ""));
	EXPECT_EQ(r, std::vector<int32_t>{ -EPROTO });
	/* a TXN streaming 4 bytes, then a chunk of 5 */
	struct rsbc_buf b = {};
	rsbc_u32(&b, 1);
	Obj(&b, RSB_T_WRITE_STREAM, "c", "o");
	rsbc_u64(&b, 0);
	rsbc_u64(&b, 4);
	r = garbage(sock, frame(RSB_OP_TXN, (uint32_t)b.len, str(b)) +
			  frame(RSB_OP_WRITE_CHUNK, 5, "12345"));
	EXPECT_EQ(r, std::vector<int32_t>{ -EPROTO });
	rsbc_free(&b);
	/* a TXN declaring more data than a TXN may hold: -EFBIG, closed
	 * before any of it is sent */
	rsbc_u32(&b, 2);
	Write(&b, "c", "small", "x");
	Obj(&b, RSB_T_WRITE_STREAM, "c", "o");
	rsbc_u64(&b, 0);
	rsbc_u64(&b, 1ULL << 40);
	r = garbage(sock, frame(RSB_OP_TXN, (uint32_t)b.len, str(b)) + frame(RSB_OP_STATFS, 0, ""));
	EXPECT_EQ(r, std::vector<int32_t>{ -EFBIG });
	rsbc_free(&b);
	/* a random TXN body of many records */
	for (unsigned seed = 0; seed < 50; seed++) {
		std::string body = std::string("\x10\0\0\0", 4) + pattern(200 + seed * 7, seed);
		garbage(sock, frame(RSB_OP_TXN, (uint32_t)body.size(), body));
	}
	/* the first client was never disturbed */
	EXPECT_EQ(Put(keep, "c", "still", "here"), 0);
	EXPECT_EQ(Read(keep, "c", "still", &res), "here");
	EXPECT_EQ(kill(pid, 0), 0);
	close(keep);
	EXPECT_EQ(Stop(SIGTERM), 0) << Log();
	ExpectStoreClean();
}

TEST_F(BrokerTest, ManyClientsAtOnce)
{
	const int nthreads = 8, per = 25;
	int fd = Conn();
	ASSERT_EQ(MkColl(fd, "c"), 0);
	std::vector<std::thread> ts;
	std::atomic<int> bad{ 0 };
	for (int t = 0; t < nthreads; t++)
		ts.emplace_back([&, t] {
			int c = rsbc_connect(sock.c_str());
			if (c < 0 || rsbc_hello(c, 1, 1, nullptr)) {
				bad++;
				return;
			}
			for (int i = 0; i < per; i++) {
				std::string n = "t" + std::to_string(t) + "-" + std::to_string(i);
				if (Put(c, "c", n, pattern(5000 + i * 100, t * 1000 + i)))
					bad++;
			}
			close(c);
		});
	for (auto &t : ts)
		t.join();
	EXPECT_EQ(bad, 0);
	int res;
	for (int t = 0; t < nthreads; t++)
		for (int i = 0; i < per; i++) {
			std::string n = "t" + std::to_string(t) + "-" + std::to_string(i);
			EXPECT_TRUE(Read(fd, "c", n, &res) == pattern(5000 + i * 100, t * 1000 + i));
		}
	struct rsbc_buf out = {};
	ASSERT_EQ(rsbc_call(fd, RSB_OP_STATFS, nullptr, &res, &out), 0);
	EXPECT_EQ(rsb_get64(out.p + 7 * 8), (uint64_t)nthreads * per);
	rsbc_free(&out);
	close(fd);
}

TEST_F(BrokerTest, ForkedChildUsesANewConnection)
{
	int fd = Conn(), res;
	ASSERT_EQ(MkColl(fd, "c"), 0);
	pid_t child = fork();
	if (child == 0) {
		/* as a Swift worker forked after the app was built */
		int c = rsbc_connect(sock.c_str());
		if (c < 0 || rsbc_hello(c, 1, 1, nullptr))
			_exit(2);
		_exit(Put(c, "c", "from-child", "child data") ? 3 : 0);
	}
	int st;
	ASSERT_EQ(waitpid(child, &st, 0), child);
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(WEXITSTATUS(st), 0);
	EXPECT_EQ(Read(fd, "c", "from-child", &res), "child data");
	/* the parent's own connection is untouched by the child's exit */
	EXPECT_EQ(Put(fd, "c", "from-parent", "p"), 0);
	close(fd);
}

TEST_F(BrokerTest, SigtermClosesTheStoreCleanly)
{
	struct stat sb;
	ASSERT_EQ(stat(sock.c_str(), &sb), 0);
	EXPECT_EQ(sb.st_mode & 07777, 0660u);
	int fd = Conn();
	ASSERT_EQ(MkColl(fd, "c"), 0);
	ASSERT_EQ(Put(fd, "c", "o", pattern(50000, 1)), 0);
	/* a client still connected does not hold the daemon up */
	EXPECT_EQ(Stop(SIGTERM), 0) << Log();
	struct rsb_hdr h = {};
	EXPECT_EQ(rsbc_recv(fd, &h, nullptr), -ECONNRESET);
	close(fd);
	EXPECT_NE(stat(sock.c_str(), &sb), 0); /* the socket file is gone */
	EXPECT_NE(Log().find("stores closed"), std::string::npos) << Log();
	ExpectStoreClean();
	ASSERT_EQ(Start(), 0) << Log();
	fd = Conn();
	int res;
	EXPECT_TRUE(Read(fd, "c", "o", &res) == pattern(50000, 1));
	close(fd);
}

TEST_F(BrokerTest, SecondDaemonOnTheSameDeviceFails)
{
	pid_t p = Spawn({ "--store", StoreArg(tmp.path + "/other.sock") });
	int st;
	ASSERT_EQ(waitpid(p, &st, 0), p);
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(WEXITSTATUS(st), 1);
	EXPECT_NE(Log().find("cannot open"), std::string::npos) << Log();
	/* a socket someone listens on is not replaced: another store */
	std::string dev2 = tmp.path + "/dev2", meta2 = tmp.path + "/meta2";
	ASSERT_EQ(make_file(dev2, 64 << 20), 0);
	struct rawstore_mkfs_opts mo;
	test_mkfs_opts_init(&mo);
	ASSERT_EQ(rawstore_mkfs(dev2.c_str(), meta2.c_str(), &mo), 0);
	p = Spawn({ "--store", "t:" + dev2 + ":" + meta2 + ":" + sock });
	ASSERT_EQ(waitpid(p, &st, 0), p);
	EXPECT_EQ(WEXITSTATUS(st), 1);
	EXPECT_NE(Log().find("cannot listen"), std::string::npos) << Log();
	int fd = Conn(); /* the first one still serves */
	close(fd);
	EXPECT_EQ(Stop(SIGTERM), 0);
}

TEST_F(BrokerTest, SigkillKeepsEveryAcknowledgedTxn)
{
	int fd = Conn();
	ASSERT_EQ(MkColl(fd, "c"), 0);
	close(fd);
	const int nthreads = 4;
	std::atomic<int> acked[nthreads];
	std::vector<std::thread> ts;
	for (int t = 0; t < nthreads; t++) {
		acked[t] = 0;
		ts.emplace_back([&, t] {
			int c = rsbc_connect(sock.c_str());
			if (c < 0 || rsbc_hello(c, 1, 1, nullptr))
				return;
			for (int i = 0;; i++) {
				std::string n = "t" + std::to_string(t) + "-" + std::to_string(i);
				struct rsbc_buf b = {}, req = {}, out = {};
				std::string d = pattern(20000 + (i % 7) * 4096, t * 100000 + i);
				Write(&b, "c", n, d);
				rsbc_u32(&req, 1);
				memcpy(rsbc_grow(&req, b.len), b.p, b.len);
				int res = -1;
				int r = rsbc_call(c, RSB_OP_TXN, &req, &res, &out);
				rsbc_free(&b);
				rsbc_free(&req);
				rsbc_free(&out);
				if (r || res)
					break;
				acked[t] = i + 1; /* acknowledged: must survive */
			}
			close(c);
		});
	}
	for (int i = 0; i < 200 && acked[0] < 20; i++)
		usleep(10000);
	EXPECT_EQ(Stop(SIGKILL), 128 + SIGKILL);
	for (auto &t : ts)
		t.join();
	int total = 0;
	for (int t = 0; t < nthreads; t++)
		total += acked[t];
	EXPECT_GE(total, 20);
	/*
	 * The killed daemon's socket file is stale: replaced.  Its device
	 * may stay locked a moment after it was reaped (the kernel tears
	 * io_uring rings down asynchronously, and the ring holds the file):
	 * -EBUSY then, as a second daemon would get; a restart a moment
	 * later opens it (systemd's RestartSec does the same).
	 */
	int started = -1;
	for (int i = 0; i < 100 && started; i++) {
		started = Start();
		if (started)
			usleep(50000);
	}
	ASSERT_EQ(started, 0) << Log();
	EXPECT_NE(Log().find("replaced a stale socket"), std::string::npos) << Log();
	fd = Conn();
	int res;
	for (int t = 0; t < nthreads; t++)
		for (int i = 0; i < acked[t]; i++) {
			std::string n = "t" + std::to_string(t) + "-" + std::to_string(i);
			std::string d = pattern(20000 + (i % 7) * 4096, t * 100000 + i);
			ASSERT_TRUE(Read(fd, "c", n, &res) == d) << n << " res " << res;
		}
	close(fd);
	EXPECT_EQ(Stop(SIGTERM), 0) << Log();
	ExpectStoreClean();
}

TEST_F(BrokerTest, ClientStalledMidFrameIsDropped)
{
	Stop(SIGTERM);
	ASSERT_EQ(Start({ "--io-timeout", "1" }), 0) << Log();
	int idle = Conn(), stalled = Conn();
	/* half a header, then nothing */
	ASSERT_EQ(rsbc_write(stalled, frame(RSB_OP_STATFS, 0, "").data(), 10), 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct rsb_hdr h = {};
	EXPECT_EQ(rsbc_recv(stalled, &h, nullptr), -ECONNRESET);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_LT(t1.tv_sec - t0.tv_sec, 10);
	close(stalled);
	EXPECT_NE(Log().find("stopped in the middle of a frame"), std::string::npos) << Log();
	/* a TXN whose streamed data never comes: dropped, nothing applied */
	stalled = Conn();
	ASSERT_EQ(MkColl(stalled, "c"), 0);
	struct rsbc_buf b = {};
	rsbc_u32(&b, 1);
	Obj(&b, RSB_T_WRITE_STREAM, "c", "never");
	rsbc_u64(&b, 0);
	rsbc_u64(&b, 100);
	ASSERT_EQ(rsbc_send(stalled, RSB_OP_TXN, 1, 1, 0, b.p, b.len), 0);
	ASSERT_EQ(rsbc_send(stalled, RSB_OP_WRITE_CHUNK, 1, 1, 0, "x", 1), 0);
	ASSERT_EQ(rsbc_recv(stalled, &h, nullptr), 0); /* the TXN's answer */
	EXPECT_EQ(h.result, -ETIMEDOUT);
	EXPECT_EQ(rsbc_recv(stalled, &h, nullptr), -ECONNRESET);
	rsbc_free(&b);
	close(stalled);
	/* an idle connection is not a stalled one: still served */
	usleep(1200000);
	std::string r;
	EXPECT_EQ(Ask(idle, RSB_OP_STAT, "c", "never", &r), -ENOENT);
	close(idle);
}

TEST_F(BrokerTest, TxnMemoryBudgetIsSharedNotExceeded)
{
	Stop(SIGTERM);
	/* 3 MiB for all: two 2 MiB streams wait for each other, a 5 MiB one
	 * takes the whole budget alone; all complete */
	ASSERT_EQ(Start({ "--max-txn-memory", "3m" }), 0) << Log();
	int fd = Conn();
	ASSERT_EQ(MkColl(fd, "c"), 0);
	std::vector<std::thread> ts;
	std::atomic<int> bad{ 0 };
	const size_t sizes[] = { 2u << 20, 2u << 20, 5u << 20, 1u << 20 };
	for (int t = 0; t < 4; t++)
		ts.emplace_back([&, t] {
			int c = rsbc_connect(sock.c_str());
			if (c < 0 || rsbc_hello(c, 1, 1, nullptr)) {
				bad++;
				return;
			}
			std::string d = pattern(sizes[t], 50 + t);
			struct rsbc_buf b = {}, out = {};
			rsbc_u32(&b, 1);
			Obj(&b, RSB_T_WRITE_STREAM, "c", "o" + std::to_string(t));
			rsbc_u64(&b, 0);
			rsbc_u64(&b, d.size());
			bool ok = !rsbc_send(c, RSB_OP_TXN, 1, 1, 0, b.p, b.len);
			for (size_t off = 0; ok && off < d.size(); off += RSB_CHUNK)
				ok = !rsbc_send(c, RSB_OP_WRITE_CHUNK, 1, 1, 0, d.data() + off,
						std::min<size_t>(RSB_CHUNK, d.size() - off));
			struct rsb_hdr h = {};
			if (!ok || rsbc_recv(c, &h, &out) || h.result)
				bad++;
			rsbc_free(&b);
			rsbc_free(&out);
			close(c);
		});
	for (auto &t : ts)
		t.join();
	EXPECT_EQ(bad, 0);
	int res;
	for (int t = 0; t < 4; t++)
		EXPECT_TRUE(Read(fd, "c", "o" + std::to_string(t), &res) == pattern(sizes[t], 50 + t));
	close(fd);
}

TEST_F(BrokerTest, ConfigFileSetsSocketModeAndGroup)
{
	Stop(SIGTERM);
	std::string conf = tmp.path + "/rawstored.conf";
	{
		std::ofstream f(conf);
		f << "# a comment\n; another\n\n[store sdb]\n"
		  << "dev = " << dev << "\nmeta=" << meta << "\n  socket =  " << sock << "  \n"
		  << "mode = 0600\ngroup = " << getgid() << "\n";
	}
	pid = Spawn({ "--config", conf });
	int fd = -1;
	for (int i = 0; i < 500 && fd < 0; i++) {
		fd = rsbc_connect(sock.c_str());
		if (fd < 0)
			usleep(10000);
	}
	ASSERT_GE(fd, 0) << Log();
	close(fd);
	struct stat sb;
	ASSERT_EQ(stat(sock.c_str(), &sb), 0);
	EXPECT_EQ(sb.st_mode & 07777, 0600u);
	EXPECT_EQ(sb.st_gid, getgid());
	EXPECT_NE(Log().find("sdb: " + dev + " serving on " + sock), std::string::npos) << Log();
	EXPECT_EQ(Stop(SIGINT), 0) << Log();

	/* a bad line, a key outside a section, a section without a socket */
	for (const char *bad : { "[store x]\ndev = a\nmeta = b\nsocket = c\nfrob = 1\n",
				 "dev = a\n", "[store x]\ndev = a\nmeta = b\n" }) {
		std::ofstream(conf) << bad;
		pid_t p = Spawn({ "--config", conf });
		int st;
		ASSERT_EQ(waitpid(p, &st, 0), p);
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 2) << bad;
	}
	EXPECT_NE(Log().find(":5: bad line"), std::string::npos) << Log();
	EXPECT_NE(Log().find("store x: dev, meta and socket are all needed"), std::string::npos);
}
