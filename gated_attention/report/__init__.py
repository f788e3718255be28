"""Report: what the chapters show. The scorecard (paper values, criteria, records) and plots.

Readers of experiment results (results entries, recorded runs) live here, above ``experiments``;
``analysis`` below only takes networks and arrays handed to it.

Modules:
    scorecard          every reproduced number beside the paper's (+ ``paper_values.json``)
    scorecard_page     the scorecard grouped by the paper's claims, both budgets
    verdict            each chapter's verdict from its rows
    budget_text        a row's budget as text, against the paper's
    runs               one line per results entry: what a recorded run is and where it ran
    run_source         under each run a chapter reads: recorded or trained, and whether its
                       training code changed since it was recorded
    execution_status   how each chapter of a build was executed (profile, time, versions)
    teacher_tables     the teacher-identification chapter's printed tables and scorecard rows
    members            one row per member of a teacher-identification run: the construction?
    mechanism          why the surplus neurons survive (ours)
    surplus_ladder     Fig. 2's surplus against the training budget
    fig3_edges         Fig. 3A-C: the loss edge of every sweep, its rows and the finding's table
    edge_plots         Fig. 3A-C: every seed's excess loss against the size (the figure)
    fig3_map           Fig. 3's finding as one table: the edge per panel and setting of ours
    size_sweeps        Fig. 3A/B per seed: did each student learn the construction?
    gd_learned         the Sec. 5.2 analysis of an in-context regression run (Table 2, Fig. 3C)
    gd_tables          its printed tables: the paired gap, Table 2, memory, recorded runs
    output_counts      output-gating neurons of the recorded students (beyond the paper)
    optimiser_members  the optimiser comparison over the recorded members (ours)
    family_tables      Fig. 4A/B: loss against parameter count per family
    fig4a_tables       Fig. 4A: the profile, the captions and the recorded run of its chapter
    fig4b_setup        Fig. 4B: the setup check, its pilots, the tables and numbers of its chapter
    recall_tables      App. D.3 (Fig. 7): every associative-recall network analysed
    recall_summaries   the associative recall chapter's printed summaries and scorecard rows
    construction_tables  the printed tables of the construction chapters (App. A and B)
    app_b_tables       "Which RNNs can be attention" (App. B, Tables 3 and 4): checks and rows
    real_block_tables  the real Mamba and LRU blocks' constructions: errors, costs (ours)
    plotting           the gated RNN's weights (Fig. 1, Fig. 2B) and the construction's cost
    teacher_plots      figures of the teacher-student chapters
    regression_plots   figures of the in-context regression chapters
    beyond_plots       figures of "Beyond the paper"
    beyond_tables      the printed tables of "Beyond the paper"
    bench_table        the bench's results as plain-text tables
    bench_plots        the bench's results as a figure
"""
