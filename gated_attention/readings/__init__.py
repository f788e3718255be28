"""Readings of runs, one module per claim: a run's entry (this build's or recorded) as typed rows
of numbers, never prose, that the chapters render (``report.table``) and score (``scorecard``).

Teacher identification and the surplus neurons (Sec. 4.1, Fig. 2, Table 1):
    teacher_members        each trained member: is it the construction? (Table 1's counts)
    teacher_scores         Fig. 2 and Table 1 over every seed of a run: their scorecard values
    teacher_merge          Fig. 2C: the group of output-gating neurons whose kernels are drawn
    teacher_runs           the recorded runs: paper budget (tuning seeds), twenty held-out seeds
    surplus_ladder         Fig. 2's surplus against the training budget (ours)
    surplus_consolidation  why the surplus neurons survive: consolidation of every student (ours)
    optimiser_members      the recorded members continued with three optimisers (ours)
How many neurons (Fig. 3):
    sweep_losses           the normalised held-out losses of a teacher-student sweep
    fig3_edges             the loss edge of every sweep at several levels, per size and level
    fig3_rows              Fig. 3A-C's scorecard values: the edge, the settings' premise, the modes
    fig3_map               the finding: the edge per panel and per setting of ours, with intervals
    fig3_learned           Fig. 3A/B per seed: did each student learn the construction? (ours)
RNNs learn gradient descent (Sec. 5, App. D.2):
    gd_learned             the Sec. 5.2 analysis of an in-context regression run
    gd_rows                its rows: per-seed gaps, Table 2, the residual, memory neurons, Fig. 3C
    gd_step                one GD step checked by Monte Carlo
Which RNNs learn attention (Fig. 4A/B):
    fig4_families          per family: the rate search, the largest size, premises, intervals
    fig4_runs              the recorded longer-budget runs and their rate searches
    fig4_setup             the Fig. 4B setup check, its pilots and the larger-LRU variant (ours)
The constructions (App. A, B), associative recall (App. D.3) and beyond the paper:
    construction           the construction chapters' checks (App. A and B)
    app_b                  "Which RNNs can be attention" (App. B, Tables 3 and 4)
    real_blocks            the real Mamba and LRU blocks' constructions: errors, costs (ours)
    recall                 every associative-recall network analysed (App. D.3, Fig. 7)
    recall_scores          App. D.3's scorecard values and the recorded runs' readings
    derived                analyses of a recorded run computed once and shipped, keyed by code
    beyond                 compressed output gating and capped memory (ours)
    beyond_counts          output-gating neurons trained students keep (ours)
The book's house:
    provenance             where a run a chapter reads came from: recorded, cached or trained
    members                an entry's trained members as rows (``python -m gated_attention run``)
    performance            the benches and GPU step times the lab wrote, and each run's cost
"""
