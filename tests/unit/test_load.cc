// Sustained load: many threads submit independent transactions (creates,
// small and large overwrites, zeroing, truncates, clones, removes, attributes,
// omap) synchronously and asynchronously, read their own objects back while
// the others write, and one thread reclaims freed space, for a bounded time.
// Checks: no lost update (every thread keeps a model of its objects and
// every read, during the run, after it and after a reopen, is byte-exact),
// no deadlock (a watchdog aborts if no transaction completes for
// RAWSTORE_LOAD_STALL seconds), memory bounded (RSS sampled every 100 ms
// must not keep growing after the warm-up) and a clean deep fsck at the end.
// Env: RAWSTORE_LOAD_SECONDS (default 20), RAWSTORE_LOAD_THREADS (default 6).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "helpers.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

namespace {

long env_long(const char *name, long def)
{
	const char *s = getenv(name);
	long v = s ? atol(s) : 0;

	return v > 0 ? v : def;
}

uint64_t rss_bytes()
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

struct Obj {
	std::string data;
	std::string attr;	/* attribute "a", empty if unset */
	std::map<std::string, std::string> omap;
};

/* Completion of an asynchronous transaction. */
struct Waiter {
	std::mutex m;
	std::condition_variable cv;
	int pending = 0;
	int first_error = 0;
};

void async_done(struct rawstore_txn *t, int result, void *arg)
{
	Waiter *w = (Waiter *)arg;

	(void)t;
	std::lock_guard<std::mutex> g(w->m);
	if (result && !w->first_error)
		w->first_error = result;
	w->pending--;
	w->cv.notify_all();
}

class LoadTest : public StoreTest {
protected:
	LoadTest() { dev_size = 512ULL << 20; }

	std::atomic<uint64_t> progress{ 0 };	/* transactions acknowledged */
	std::atomic<uint64_t> reads{ 0 }, bytes_verified{ 0 };
	std::atomic<bool> stop{ false };
	std::atomic<int> failures{ 0 };
	std::mutex lat_m;
	std::vector<double> lat_us;		/* synchronous submit latencies */

	void fail(const std::string &why)
	{
		if (failures++ < 20)
			ADD_FAILURE() << why;
	}

	/* Read @name back and compare with the model. */
	bool verify(const std::string &coll, const std::string &name, const Obj *o)
	{
		struct rawstore_stat s;
		s.struct_size = sizeof(s);
		int r = rawstore_stat(st, coll.c_str(), name.data(), name.size(), &s);
		if (!o) {
			if (r != -ENOENT) {
				fail(coll + "/" + name + ": removed object has stat " +
				     std::to_string(r));
				return false;
			}
			return true;
		}
		if (r != 0 || s.size != o->data.size()) {
			fail(coll + "/" + name + ": stat " + std::to_string(r) + " size " +
			     std::to_string(s.size) + " want " + std::to_string(o->data.size()));
			return false;
		}
		std::string buf(o->data.size() + 1, '\x5a');
		ssize_t n = rawstore_read(st, coll.c_str(), name.data(), name.size(), 0, &buf[0],
					  buf.size());
		if (n != (ssize_t)o->data.size() ||
		    memcmp(buf.data(), o->data.data(), o->data.size())) {
			fail(coll + "/" + name + ": data differs from the model (read " +
			     std::to_string(n) + " of " + std::to_string(o->data.size()) + ")");
			return false;
		}
		char ab[64];
		ssize_t al = rawstore_getattr(st, coll.c_str(), name.data(), name.size(), "a", ab,
					      sizeof(ab));
		if (o->attr.empty() ? al != -ENODATA
				    : (al != (ssize_t)o->attr.size() ||
				       memcmp(ab, o->attr.data(), o->attr.size()))) {
			fail(coll + "/" + name + ": attribute differs from the model");
			return false;
		}
		std::map<std::string, std::string> got;
		r = rawstore_omap_iterate(
			st, coll.c_str(), name.data(), name.size(), nullptr, 0,
			[](void *arg, const void *k, size_t kl, const void *v, size_t vl) {
				(*(std::map<std::string, std::string> *)arg)[std::string(
					(const char *)k, kl)] = std::string((const char *)v, vl);
				return 0;
			},
			&got);
		if (r < 0 || got != o->omap) {
			fail(coll + "/" + name + ": omap differs from the model (" +
			     std::to_string(r) + ")");
			return false;
		}
		reads++;
		bytes_verified += o->data.size();
		return true;
	}

	/* One client: owns collection "t<id>" and every object in it. */
	void client(int id, std::map<std::string, Obj> &model)
	{
		const std::string coll = "t" + std::to_string(id);
		std::mt19937_64 rng(0x5eed0000u + id);
		auto rnd = [&](uint64_t n) { return n ? rng() % n : 0; };
		const int n_names = 12;
		std::vector<double> mine;
		Waiter w;

		while (!stop && failures == 0) {
			std::string name = "o" + std::to_string(rnd(n_names));
			auto it = model.find(name);
			Obj *cur = it == model.end() ? nullptr : &it->second;
			unsigned op = (unsigned)rnd(100);
			if (op < 25) { /* read back one of ours */
				verify(coll, name, cur);
				continue;
			}
			struct rawstore_txn *t = nullptr;
			if (rawstore_txn_new(&t)) {
				fail("txn_new");
				return;
			}
			Obj next = cur ? *cur : Obj();
			bool exists = true;
			std::string other;
			/* every op but remove and clone works on an existing object */
			if (op < 62 || op >= 76)
				rawstore_txn_touch(t, coll.c_str(), name.data(), name.size());
			if (op < 50) { /* write: small in place, or large */
				uint64_t len = rnd(4) ? 1 + rnd(8192) : 1 + rnd(256 << 10);
				uint64_t off = rnd(3) ? rnd(next.data.size() + 1) : rnd(384 << 10);
				std::string d = pattern(len, (unsigned)rng());
				rawstore_txn_write(t, coll.c_str(), name.data(), name.size(), off,
						   d.data(), d.size());
				if (next.data.size() < off + len)
					next.data.resize(off + len, '\0');
				next.data.replace(off, len, d);
			} else if (op < 56) { /* zero */
				uint64_t off = rnd(next.data.size() + 1), len = 1 + rnd(65536);
				rawstore_txn_zero(t, coll.c_str(), name.data(), name.size(), off, len);
				if (next.data.size() < off + len)
					next.data.resize(off + len, '\0');
				std::fill(next.data.begin() + off, next.data.begin() + off + len, '\0');
			} else if (op < 62) { /* truncate */
				uint64_t sz = rnd(next.data.size() + 8192);
				rawstore_txn_truncate(t, coll.c_str(), name.data(), name.size(), sz);
				next.data.resize(sz, '\0');
			} else if (op < 70) { /* remove */
				if (!cur) {
					rawstore_txn_free(t);
					continue;
				}
				rawstore_txn_remove(t, coll.c_str(), name.data(), name.size());
				exists = false;
			} else if (op < 76) { /* clone another object of ours over this one */
				other = "o" + std::to_string(rnd(n_names));
				auto src = model.find(other);
				if (other == name || src == model.end()) {
					rawstore_txn_free(t);
					continue;
				}
				rawstore_txn_clone(t, coll.c_str(), other.data(), other.size(),
						   name.data(), name.size());
				next = src->second;
			} else if (op < 82) { /* attribute */
				next.attr = "v" + std::to_string(rng());
				rawstore_txn_setattr(t, coll.c_str(), name.data(), name.size(), "a",
						     next.attr.data(), next.attr.size());
			} else { /* omap: set two keys, maybe drop one */
				for (int k = 0; k < 2; k++) {
					std::string key = "k" + std::to_string(rnd(20));
					std::string val = pattern(1 + rnd(200), (unsigned)rng());
					rawstore_txn_omap_set(t, coll.c_str(), name.data(), name.size(),
							      key.data(), key.size(), val.data(),
							      val.size());
					next.omap[key] = val;
				}
				if (rnd(2)) {
					std::string key = "k" + std::to_string(rnd(20));
					rawstore_txn_omap_rm(t, coll.c_str(), name.data(), name.size(),
							     key.data(), key.size());
					next.omap.erase(key);
				}
			}
			int r;
			if (rnd(4) == 0) { /* asynchronous, waited for at once */
				{
					std::lock_guard<std::mutex> g(w.m);
					w.pending++;
				}
				r = rawstore_submit_async(st, t, async_done, &w);
				std::unique_lock<std::mutex> g(w.m);
				if (r)
					w.pending--;
				else
					w.cv.wait(g, [&] { return w.pending == 0; });
				if (!r)
					r = w.first_error;
			} else {
				auto t0 = std::chrono::steady_clock::now();
				r = rawstore_submit(st, t);
				mine.push_back(std::chrono::duration<double, std::micro>(
						       std::chrono::steady_clock::now() - t0)
						       .count());
			}
			rawstore_txn_free(t);
			if (r) {
				fail(coll + "/" + name + ": transaction op " + std::to_string(op) +
				     " failed: " + std::to_string(r) + " " + rawstore_errmsg());
				return;
			}
			progress++;
			if (exists)
				model[name] = next;
			else
				model.erase(name);
			if (rnd(8) == 0)
				verify(coll, name, exists ? &model[name] : nullptr);
		}
		std::lock_guard<std::mutex> g(lat_m);
		lat_us.insert(lat_us.end(), mine.begin(), mine.end());
	}

	void verify_all(const std::vector<std::map<std::string, Obj>> &models)
	{
		for (size_t i = 0; i < models.size(); i++) {
			std::string coll = "t" + std::to_string(i);
			for (int k = 0; k < 12; k++) {
				std::string name = "o" + std::to_string(k);
				auto it = models[i].find(name);
				verify(coll, name, it == models[i].end() ? nullptr : &it->second);
			}
		}
	}
};

} // namespace

TEST_F(LoadTest, ManyWritersNoLostUpdateNoDeadlockBoundedMemory)
{
	const long seconds = env_long("RAWSTORE_LOAD_SECONDS", 20);
	const int threads = (int)env_long("RAWSTORE_LOAD_THREADS", 6);
	const long stall = env_long("RAWSTORE_LOAD_STALL", 120);
	std::vector<std::map<std::string, Obj>> models(threads);

	for (int i = 0; i < threads; i++)
		ASSERT_EQ(MkColl(("t" + std::to_string(i)).c_str()), 0);

	/* Watchdog: the load must keep completing transactions. */
	std::atomic<bool> done{ false };
	std::thread watchdog([&] {
		uint64_t last = progress;
		auto since = std::chrono::steady_clock::now();
		while (!done) {
			std::this_thread::sleep_for(std::chrono::milliseconds(200));
			uint64_t now = progress;
			if (now != last) {
				last = now;
				since = std::chrono::steady_clock::now();
			} else if (std::chrono::steady_clock::now() - since >
				   std::chrono::seconds(stall)) {
				fprintf(stderr, "load: no transaction completed for %ld s: "
					"deadlock\n", stall);
				abort();
			}
		}
	});

	/* Memory: RSS must level off. The peak over the first quarter of the
	 * run (after warm-up) bounds the rest, plus slack for RocksDB's
	 * memtables and block cache. */
	std::atomic<uint64_t> rss_warm{ 0 }, rss_peak{ 0 };
	auto start = std::chrono::steady_clock::now();
	std::thread sampler([&] {
		while (!done) {
			uint64_t r = rss_bytes();
			double el = std::chrono::duration<double>(std::chrono::steady_clock::now() -
								  start)
					    .count();
			if (el < seconds / 4.0)
				rss_warm = std::max<uint64_t>(rss_warm, r);
			rss_peak = std::max<uint64_t>(rss_peak, r);
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
		}
	});

	/* Reclaim and statfs run beside the clients. */
	std::atomic<int> reclaims{ 0 };
	std::thread reclaimer([&] {
		while (!stop) {
			int r = rawstore_reclaim(st);
			if (r && r != -EOPNOTSUPP)
				fail("reclaim: " + std::to_string(r));
			reclaims++;
			struct rawstore_statfs s;
			s.struct_size = sizeof(s);
			if (rawstore_statfs(st, &s))
				fail("statfs");
			std::this_thread::sleep_for(std::chrono::milliseconds(150));
		}
	});

	std::vector<std::thread> clients;
	for (int i = 0; i < threads; i++)
		clients.emplace_back([&, i] { client(i, models[i]); });
	std::this_thread::sleep_for(std::chrono::seconds(seconds));
	stop = true;
	for (auto &c : clients)
		c.join();
	reclaimer.join();
	double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

	std::sort(lat_us.begin(), lat_us.end());
	double p50 = lat_us.empty() ? 0 : lat_us[lat_us.size() / 2];
	double p99 = lat_us.empty() ? 0 : lat_us[lat_us.size() * 99 / 100];
	printf("load: %d threads, %.1f s: %llu transactions (%.0f/s), sync submit p50 %.0f us "
	       "p99 %.0f us, %llu reads verifying %llu bytes, %d reclaims, RSS %.1f MiB after "
	       "warm-up, peak %.1f MiB\n",
	       threads, el, (unsigned long long)progress.load(), progress / el, p50, p99,
	       (unsigned long long)reads.load(), (unsigned long long)bytes_verified.load(),
	       reclaims.load(), rss_warm / 1048576.0, rss_peak / 1048576.0);
	EXPECT_EQ(failures.load(), 0);
	EXPECT_GT(progress.load(), (uint64_t)threads);
	EXPECT_GT(reclaims.load(), 0);

	verify_all(models);
	done = true;
	watchdog.join();
	sampler.join();
#ifdef UNDER_SANITIZER
	const uint64_t slack = 512ULL << 20; /* ASan's quarantine, TSan's shadow */
#else
	const uint64_t slack = 128ULL << 20;
#endif
	EXPECT_LE(rss_peak.load(), rss_warm.load() + slack)
		<< "RSS grew from " << rss_warm / 1048576 << " MiB after warm-up to "
		<< rss_peak / 1048576 << " MiB";

	Reopen();
	verify_all(models);
	EXPECT_EQ(failures.load(), 0);
	ExpectClean();
}
