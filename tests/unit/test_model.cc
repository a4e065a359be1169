// Randomized model test: thousands of random transactions are applied to
// the store and to an in-memory model; results, data, attributes, omap and
// listings must agree, also after reopening, and fsck must stay clean.
// RAWSTORE_TEST_SCALE=n multiplies the number of operations.
#include <atomic>
#include <map>
#include <set>

#include "helpers.h"

namespace {

struct Obj {
	std::string data;
	std::map<std::string, std::string> attrs, omap;
	bool has_header = false;
	std::string header;
};

struct Model {
	std::set<std::string> colls;
	std::map<std::pair<std::string, std::string>, Obj> objs;
};

struct Rng {
	uint64_t x;
	uint32_t operator()(uint32_t n)
	{
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		return (uint32_t)(x % n);
	}
};

int kv_cb(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	(*static_cast<std::map<std::string, std::string> *>(arg))[std::string(
		static_cast<const char *>(k), kl)] = std::string(static_cast<const char *>(v), vl);
	return 0;
}

int name_cb(void *arg, const void *n, size_t l)
{
	static_cast<std::vector<std::string> *>(arg)->emplace_back(static_cast<const char *>(n),
								   l);
	return 0;
}

struct ModelParam {
	uint32_t min_alloc, csum_block, inline_max;
	enum rawstore_io_engine engine;
	uint32_t deferred_max;
	unsigned int max_group;
	bool async;			/* batches of transactions in flight together */
	int32_t deferred_new_max = 0;
};

/* "4k", "64k", "0": a size for a test name. */
static std::string size_name(uint32_t v)
{
	if (v && v % 1024 == 0)
		return std::to_string(v / 1024) + "k";
	return std::to_string(v);
}

/* A readable instance name, e.g. ma4k_cb4k_inline4k_auto_def32k_grp64_sync. */
static std::string model_name(const ModelParam &p)
{
	std::string engine = p.engine == RAWSTORE_ENGINE_LIBAIO	   ? "libaio"
			     : p.engine == RAWSTORE_ENGINE_IO_URING ? "uring"
								     : "auto";

	return "ma" + size_name(p.min_alloc) + "_cb" + size_name(p.csum_block) + "_inline" +
	       size_name(p.inline_max) + "_" + engine + "_def" + size_name(p.deferred_max) +
	       "_grp" + std::to_string(p.max_group) + (p.async ? "_async" : "_sync") +
	       (p.deferred_new_max ? "_new" + size_name((uint32_t)p.deferred_new_max) : "");
}

static std::string model_param_name(const ::testing::TestParamInfo<ModelParam> &info)
{
	return model_name(info.param);
}

/* googletest prints GetParam() with this instead of a byte dump. */
[[maybe_unused]] static void PrintTo(const ModelParam &p, std::ostream *os)
{
	*os << model_name(p);
}

struct Pending {
	int result = 1;
	std::atomic<int> *done;
};

void pending_cb(struct rawstore_txn *, int result, void *arg)
{
	auto p = static_cast<Pending *>(arg);
	p->result = result;
	(*p->done)++;
}

class ModelTest : public StoreTest, public ::testing::WithParamInterface<ModelParam> {
protected:
	Model m;
	/* RAWSTORE_TEST_SEED picks another sequence (printed on failure) */
	Rng rng{ getenv("RAWSTORE_TEST_SEED") ? strtoull(getenv("RAWSTORE_TEST_SEED"), nullptr, 0) |
							 1 : 0x1234567 };
	const char *colls[2] = { "c0", "c1" };

	void SetUp() override
	{
		dev = tmp.path + "/dev";
		meta = tmp.path + "/meta";
		ASSERT_EQ(make_file(dev, 256ULL << 20), 0);
		struct rawstore_mkfs_opts mo;
		test_mkfs_opts_init(&mo);
		mo.min_alloc_size = GetParam().min_alloc;
		mo.csum_block_size = GetParam().csum_block;
		mo.inline_max = GetParam().inline_max;
		ASSERT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), 0);
		oo.engine = GetParam().engine;
		oo.deferred_max = GetParam().deferred_max;
		oo.max_group = GetParam().max_group;
		oo.deferred_new_max = GetParam().deferred_new_max;
		ASSERT_EQ(Open(), 0);
	}

	std::string Name() { return "o" + std::to_string(rng(10)); }

	/* Add a random op to @t and apply it to @mm; returns the expected error. */
	int RandomOp(struct rawstore_txn *t, Model &mm)
	{
		const char *c = colls[rng(2)];
		std::string n = Name();
		auto key = std::make_pair(std::string(c), n);
		bool cexists = mm.colls.count(c) > 0;
		auto it = mm.objs.find(key);
		bool exists = it != mm.objs.end();
		uint32_t op = rng(100);
		const uint64_t maxoff = 300000;

		if (op < 3) {
			rawstore_txn_coll_create(t, c);
			if (cexists)
				return -EEXIST;
			mm.colls.insert(c);
			return 0;
		}
		if (op < 4) {
			rawstore_txn_coll_remove(t, c);
			if (!cexists)
				return -ENOENT;
			for (auto &o : mm.objs)
				if (o.first.first == c)
					return -ENOTEMPTY;
			mm.colls.erase(c);
			return 0;
		}
		if (op < 37) { /* write */
			uint64_t off = rng(3) ? rng(maxoff) : rng(8) * 4096;
			size_t len = rng(4) ? rng(20000) + 1 : rng(150000) + 1;
			std::string d = pattern(len, rng(1000000));
			rawstore_txn_write(t, c, n.data(), n.size(), off, d.data(), d.size());
			if (!cexists)
				return -ENOENT;
			Obj &o = mm.objs[key];
			if (o.data.size() < off + len)
				o.data.resize(off + len, 0);
			o.data.replace(off, len, d);
			return 0;
		}
		if (op < 40) { /* rename, into either collection, maybe over an object */
			const char *dc = colls[rng(2)];
			std::string d = Name();
			if (!strcmp(dc, c) && d == n) {
				int r = rawstore_txn_rename(t, c, n.data(), n.size(), dc,
							    d.data(), d.size());
				EXPECT_EQ(r, -EINVAL);
				return 0;
			}
			rawstore_txn_rename(t, c, n.data(), n.size(), dc, d.data(), d.size());
			if (!cexists || !exists || !mm.colls.count(dc))
				return -ENOENT;
			Obj o = std::move(it->second);
			mm.objs.erase(it);
			mm.objs[std::make_pair(std::string(dc), d)] = std::move(o);
			return 0;
		}
		if (op < 48) { /* zero */
			uint64_t off = rng(maxoff), len = rng(100000) + 1;
			rawstore_txn_zero(t, c, n.data(), n.size(), off, len);
			if (!cexists)
				return -ENOENT;
			Obj &o = mm.objs[key];
			if (o.data.size() < off + len)
				o.data.resize(off + len, 0);
			o.data.replace(off, len, std::string(len, 0));
			return 0;
		}
		if (op < 56) { /* truncate */
			uint64_t sz = rng(4) ? rng(maxoff) : rng(5000);
			rawstore_txn_truncate(t, c, n.data(), n.size(), sz);
			if (!cexists || !exists)
				return -ENOENT;
			it->second.data.resize(sz, 0);
			return 0;
		}
		if (op < 62) { /* remove */
			rawstore_txn_remove(t, c, n.data(), n.size());
			if (!cexists || !exists)
				return -ENOENT;
			mm.objs.erase(it);
			return 0;
		}
		if (op < 67) { /* clone */
			std::string d = Name();
			rawstore_txn_clone(t, c, n.data(), n.size(), d.data(), d.size());
			if (!cexists || !exists)
				return -ENOENT;
			if (d != n)
				mm.objs[std::make_pair(std::string(c), d)] = it->second;
			return 0;
		}
		if (op < 70) {
			rawstore_txn_touch(t, c, n.data(), n.size());
			if (!cexists)
				return -ENOENT;
			mm.objs[key];
			return 0;
		}
		std::string k = "k" + std::to_string(rng(20)), v = pattern(rng(300), rng(1000));
		if (op < 78) {
			rawstore_txn_setattr(t, c, n.data(), n.size(), k.c_str(), v.data(),
					     v.size());
			if (!cexists || !exists)
				return -ENOENT;
			it->second.attrs[k] = v;
			return 0;
		}
		if (op < 82) {
			rawstore_txn_rmattr(t, c, n.data(), n.size(), k.c_str());
			if (!cexists || !exists)
				return -ENOENT;
			if (!it->second.attrs.erase(k))
				return -ENODATA;
			return 0;
		}
		if (op < 92) {
			rawstore_txn_omap_set(t, c, n.data(), n.size(), k.data(), k.size(),
					      v.data(), v.size());
			if (!cexists || !exists)
				return -ENOENT;
			it->second.omap[k] = v;
			return 0;
		}
		if (op < 95) {
			rawstore_txn_omap_rm(t, c, n.data(), n.size(), k.data(), k.size());
			if (!cexists || !exists)
				return -ENOENT;
			it->second.omap.erase(k);
			return 0;
		}
		if (op < 97) {
			std::string k2 = "k" + std::to_string(rng(20));
			rawstore_txn_omap_rmrange(t, c, n.data(), n.size(), k.data(), k.size(),
						  k2.data(), k2.size());
			if (!cexists || !exists)
				return -ENOENT;
			auto &om = it->second.omap;
			for (auto i = om.lower_bound(k); i != om.end() && i->first < k2;)
				i = om.erase(i);
			return 0;
		}
		rawstore_txn_omap_setheader(t, c, n.data(), n.size(), v.data(), v.size());
		if (!cexists || !exists)
			return -ENOENT;
		it->second.has_header = true;
		it->second.header = v;
		return 0;
	}

	void CheckObject(const std::pair<std::string, std::string> &k, const Obj &o)
	{
		const char *c = k.first.c_str();
		const std::string &n = k.second;
		ASSERT_EQ(Size(c, n), o.data.size()) << c << "/" << n;
		ASSERT_EQ(Read(c, n, 0, o.data.size() + 100), o.data) << c << "/" << n;
		std::map<std::string, std::string> a, om;
		rawstore_attr_iterate(st, c, n.data(), n.size(), kv_cb, &a);
		ASSERT_EQ(a, o.attrs);
		rawstore_omap_iterate(st, c, n.data(), n.size(), nullptr, 0, kv_cb, &om);
		ASSERT_EQ(om, o.omap);
		std::string h(1000, 0);
		ssize_t r = rawstore_omap_get_header(st, c, n.data(), n.size(), &h[0], h.size());
		if (o.has_header) {
			ASSERT_EQ(r, (ssize_t)o.header.size());
			h.resize((size_t)r);
			ASSERT_EQ(h, o.header);
		} else {
			ASSERT_EQ(r, -ENODATA);
		}
	}

	void CheckAll()
	{
		for (auto &o : m.objs)
			CheckObject(o.first, o.second);
		for (const char *c : colls) {
			std::vector<std::string> got, want;
			int r = rawstore_list(st, c, nullptr, 0, 0, name_cb, &got);
			if (!m.colls.count(c)) {
				ASSERT_EQ(r, -ENOENT);
				continue;
			}
			for (auto &o : m.objs)
				if (o.first.first == c)
					want.push_back(o.first.second);
			ASSERT_EQ(got, want);
		}
		auto s = Statfs();
		ASSERT_EQ(s.objects, m.objs.size());
		ASSERT_EQ(s.collections, m.colls.size());
	}
};

TEST_P(ModelTest, RandomOpsMatchModel)
{
	const uint64_t txns = 600 * scale();
	uint64_t failed = 0;
	for (uint64_t i = 0; i < txns; i++) {
		if (GetParam().async) {
			/* Each txn is built against the model after the ones before it;
			 * all are in flight together and land in shared groups. */
			int batch = (int)rng(16) + 1;
			std::vector<struct rawstore_txn *> ts;
			std::vector<int> wants;
			std::vector<Pending> pend((size_t)batch);
			std::atomic<int> done{ 0 };
			for (int k = 0; k < batch; k++) {
				struct rawstore_txn *t = T();
				Model mm = m;
				int nops = (int)rng(4) + 1, want = 0;
				for (int j = 0; j < nops; j++) {
					int e = RandomOp(t, mm);
					if (e && !want)
						want = e;
				}
				if (!want)
					m = mm;
				else
					failed++;
				ts.push_back(t);
				wants.push_back(want);
			}
			for (int k = 0; k < batch; k++) {
				pend[(size_t)k].done = &done;
				ASSERT_EQ(rawstore_submit_async(st, ts[(size_t)k], pending_cb,
								&pend[(size_t)k]), 0);
			}
			while (done < batch)
				usleep(200);
			for (int k = 0; k < batch; k++) {
				EXPECT_EQ(pend[(size_t)k].result, wants[(size_t)k])
					<< "txn " << i << "+" << k;
				rawstore_txn_free(ts[(size_t)k]);
			}
			ASSERT_FALSE(HasFailure());
			i += (uint64_t)batch - 1;
			if (i >= txns / 2 && i < txns / 2 + (uint64_t)batch)
				Reopen();
			continue;
		}
		struct rawstore_txn *t = T();
		Model mm = m;
		int nops = (int)rng(4) + 1, want = 0;
		for (int j = 0; j < nops; j++) {
			int e = RandomOp(t, mm);
			if (e && !want)
				want = e;
		}
		int got = rawstore_submit(st, t);
		rawstore_txn_free(t);
		ASSERT_EQ(got, want) << "txn " << i << " (RAWSTORE_TEST_SEED="
				     << (getenv("RAWSTORE_TEST_SEED") ?: "default") << ")";
		if (!got)
			m = mm;
		else
			failed++;
		if (i % 50 == 0 && !m.objs.empty()) {
			auto it = m.objs.begin();
			std::advance(it, rng((uint32_t)m.objs.size()));
			CheckObject(it->first, it->second);
		}
		if (i == txns / 2)
			Reopen();
	}
	EXPECT_GT(failed, 0u);
	EXPECT_LT(failed, txns);
	if (GetParam().async) {
		struct rawstore_perf p;
		p.struct_size = sizeof(p);
		ASSERT_EQ(rawstore_perf_get(st, &p), 0);
		EXPECT_LT(p.commit_groups, p.txns_committed); /* groups were shared */
	}
	CheckAll();
	ExpectClean();
	Reopen();
	CheckAll();
	ExpectClean();
	ASSERT_EQ(rawstore_reclaim(st), 0);
	EXPECT_EQ(Statfs().unpunched, 0u);
	CheckAll();
}

INSTANTIATE_TEST_SUITE_P(Geometries, ModelTest,
			 ::testing::Values(ModelParam{ 4096, 4096, 4096, RAWSTORE_ENGINE_AUTO,
							       32768, 64, false },
					   ModelParam{ 16384, 4096, 0, RAWSTORE_ENGINE_AUTO, 65536,
							       64, false },
					   ModelParam{ 65536, 8192, 2048, RAWSTORE_ENGINE_AUTO,
							       32768, 64, false },
					   ModelParam{ 4096, 4096, 4096, RAWSTORE_ENGINE_LIBAIO, 0,
							       1, false },
					   ModelParam{ 4096, 4096, 4096, RAWSTORE_ENGINE_AUTO,
							       32768, 64, true },
					   ModelParam{ 16384, 4096, 0, RAWSTORE_ENGINE_AUTO,
							       65536, 4, true },
					   ModelParam{ 4096, 4096, 4096, RAWSTORE_ENGINE_AUTO,
							       32768, 64, false, 65536 },
					   ModelParam{ 16384, 4096, 0, RAWSTORE_ENGINE_AUTO,
							       0, 8, true, 65536 }),
			 model_param_name);

} // namespace
