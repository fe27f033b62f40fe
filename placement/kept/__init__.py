"""What a worker keeps between requests of what the database holds.

This, with the two stores of :mod:`placement.metrics` named below, is the
only process-wide mutable state that depends on the database.  A worker
keeps a little else between requests, none of it read from the
database, each kept beside the code it serves: the policy enforcer's
decisions (``placement/policy.py``: one answer per rule, target and
credentials, all forgotten whenever the rules or the policy file
change), compiled JSON schema validators and SQL text built from the code
alone (``placement/request.py``, ``objects/candidates/search.py``), and
oslo.db's pool of connections.

The database is the one authority; workers share nothing else.  But
reading and judging the providers of every tree a query touches is most
of a candidate search's work, and between two searches most trees do not
change (a scheduler asks again and again about the same hosts, and each
claim changes one).  So each worker keeps, per database engine, one
:class:`Kept` (:func:`of`), which the application hands to the candidate
search and to the provider list with every request
(``RequestContext.kept``).  On a deployment small enough, a worker also
fills its store with every tree as it starts, through the same reading
a search does (:func:`placement.app.warm`).  :data:`NOTHING` keeps
nothing: searches through it read and work out everything afresh, and
give the same answers byte for byte
(``tests/functional/test_kept_changes_nothing.py``).

Words
-----
entry
    a provider's inventories (with nothing used) and traits, with the
    generation and uuid it was read at.
state
    what may change about a tree without any generation changing, or
    tells that something did: its providers' ids, generations, parents,
    uuids, aggregate ids and counts of allocation removals
    (``placement/db/allocation_removals.py``).  Every search reads the
    state of the trees it may use afresh, in one query, as one text per
    bucket of 64 trees.
usage
    what a provider's allocations use, per class, kept under the
    (generation, count of removals) read before it.
tree
    a :class:`placement.objects.candidates.trees.Tree`: the providers of
    one root with their entries, usage and aggregates, built from a state
    and its providers' usage.
candidate list
    per recent query, the first candidates built around one tree, with
    the trees they were built from
    (:mod:`placement.objects.candidates.reuse`); queries to which a tree
    gives equal lists hold one.
listed provider
    what ``GET /resource_providers`` read of one provider.
key
    an int naming one kept object (a tree, a candidate list, a listed
    provider, an inventory dict), handed out once per process
    (:func:`placement.kept.keys.new_key`).
text
    what a response wrote for a kept object: a listed provider's, under
    its key and its *shape* (what else the text depends on: the
    microversion's features, the mount point) in :class:`Texts`; a tree
    and a candidate list hold their own, and are gone with them.

Why using what is kept is safe
------------------------------
1. *Entries follow generations.*  Every write that changes a provider's
   inventories or traits checks and bumps its generation in the same
   transaction.  An entry is used only while the generation and uuid a
   search reads first are the ones it was read at; entries are read after
   that generation, so at worst they are newer, and a newer generation
   makes the next search read them again.
2. *Ids are never reused.*  Entries, trees and listed providers are found
   by provider id.  PostgreSQL sequences and InnoDB (MariaDB 10.2.4+,
   MySQL 8.0+) never hand out an id twice; SQLite does unless the table
   has AUTOINCREMENT, which migration 0002 (and adoption of an upstream
   database) gives it.  A provider deleted and created again under the
   same uuid thus has a new id, and is read afresh.  A restart of an older
   MySQL, or a database restored from a backup, breaks this: restart the
   workers then (README, "Running it for real").
3. *States cover everything else.*  What may change without a generation
   bump (aggregates written before microversion 1.19; re-parenting;
   names), or tells that usage did (rule 4), is in the state every search
   reads.  A tree is reused only when its state equals the kept one, a
   bucket's trees only when its whole text equals one read before, so
   no answer depends on the order rows come in; a tree whose state is
   unchanged has unchanged usage (rule 4), so the kept tree is the one a
   search would build.
4. *Usage follows generations and removals.*  Every write adding
   allocations bumps the generation of each provider it allocates from,
   and every write deleting allocations adds one to the removal count of
   each provider that lost some (``db/allocation_removals.py``), each in
   the transaction of the change; neither number ever goes down.  So a
   provider's usage changes only when its (generation, removals) pair
   does.  A search reads the pairs in the state first and the usage of
   the providers whose pair differs from the one their kept usage is
   tagged with afterwards, and keeps that usage tagged with the pair read
   *before* it.  A write committing between the two reads makes the usage
   newer than its tag, never older; and that write moved the pair, so the
   next search reads a pair unequal to the tag and reads the usage again.
   An equal pair thus means no write since the tag was read, and the kept
   usage is the usage now.  Only our writers count removals: allocations
   deleted by anything else (upstream Placement on the same database, SQL
   by hand) are unseen until the workers restart (README, "Running it for
   real").
5. *Candidate lists follow their trees.*  A tree's candidates depend
   only on the query, the tree and the trees of the sharing providers
   serving it (those in an aggregate with one of its providers, which
   their states say), so a list is reused only while those trees are the
   very objects it was built from.  A candidate of sharing providers
   alone may be built around several trees; the search drops its
   repeats as it goes, whether the lists were kept or built.
6. *Class names are checked.*  Entries name classes.  Every search reads
   the class names first; when a class id is found under another name
   (a rename, before microversion 1.7) everything naming classes is
   dropped, and a search that read the names before such a rename does not
   store what it built.
7. *Nothing kept is changed.*  Kept objects are replaced, never mutated,
   so requests in threads may share them; the stores holding them are
   changed by single assignments (so are the texts a candidate list
   holds, rule 8, which nothing but the rendering reads).  Bounds
   (:mod:`.store`) start a store again from empty rather than evict
   piecemeal.
8. *Texts follow their object.*  A text is kept under the key of the
   object it was written from, and keys are never reused (unlike
   ``id()``): a replaced tree or provider has a new key, so its old text
   is never found for it.  Texts of replaced objects are dropped with them
   (trees) or when texts are held for many more objects than are kept.  A
   candidate list holds its texts itself, and they go with it.  One list
   serves several queries only when its content is theirs (rule 5 holds
   for each: the same trees, the same candidates), so what its text
   depends on besides the list -- the microversion's features and the
   query's group suffixes -- is in the text's shape.

Kept elsewhere, on purpose
--------------------------
With ``[metrics] enabled`` a worker keeps two more things, in
:mod:`placement.metrics` (a package such a worker alone imports):

* the capacity figures and their last report, per database
  (``placement.metrics.capacity._KEPT``; what is kept and why it is never
  stale is :mod:`placement.metrics.kept_figures`'s docstring);
* prometheus-client's counters, histograms and gauges
  (:mod:`placement.metrics.instruments`), in memory or, in multiprocess
  mode, in files shared by the workers.

They stay out of :class:`Kept` because nothing here serves them and they
serve nothing here: they are read by ``GET /metrics`` and ``GET
/capacity`` only, under their own lock (one reading at a time per
worker, where the stores here are shared by requests in threads without
one), with their own rules for staleness (provider states, not
generations alone) and their own lifetime (``capacity_interval``); and a
worker without ``[metrics]`` must not import them.
"""

from placement.kept.store import (NOTHING, Entry, Kept, QueryCandidates, QueryLists,
                                  Texts, of)

__all__ = ["NOTHING", "Entry", "Kept", "QueryCandidates", "QueryLists", "Texts", "of"]
