"""Motifs: planted-motif tasks, and what a model learned, as JASPAR-matched TF-MoDISco patterns.

Commands::

    python -m bigbird_dna.motifs plant --rule presence --motif MA0139 --out planted/
    python -m bigbird_dna.motifs plant --rule one_of --motif MA0139 --motif MA0148 --out either/
    python -m bigbird_dna.motifs plant --rule spacing --motif MA0139 --motif MA0148 --spacing 10-20 --out spacing/
    python -m bigbird_dna.motifs learn attributions.h5 --out motifs/ --jaspar-taxon vertebrates
    python -m bigbird_dna.motifs jaspar --jaspar-taxon plants     # list motifs: ID, name, taxon, consensus

plant writes train/val/test.tsv (sequence, label, ...), sites.bed (each planted instance, in the
sequence's own coordinates, 0-based half-open) and manifest.json into a new folder; train on it
with python -m bigbird_dna.train task=promoter data=promoter_labelled data.train=DIR/train.tsv
data.val=DIR/val.tsv data.test=DIR/test.tsv.

learn reads the HDF5 that python -m bigbird_dna.explain writes: sequences float32 [N, 4, L]
one-hot (rows A, C, G, T), attributions float32 [N, 4, L] hypothetical contributions, optional
names [N], attributes method, target, model. It writes report.md, report.html, patterns.json,
logos/ and modisco.h5 into a new folder.

Needs the motifs extra: pip install 'bigbird_dna[motifs]'. Bad input: one error line, exit 2.
"""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

from bigbird_dna.errors import InputError, exit_on_input_error
from bigbird_dna.runtime.cli_args import parser_from_doc

PROG = "python -m bigbird_dna.motifs"
# CTCF; CTCF or FOXA1; CTCF then FOXA1
DEFAULT_MOTIFS = {"presence": ["MA0139"], "one_of": ["MA0139", "MA0148"], "spacing": ["MA0139", "MA0148"]}


def sample_genome() -> Path:
    """The genome bundled with the package (*H. pylori* F32, 1.6 Mbp)."""
    return Path(str(resources.files("bigbird_dna.sample_data") / "h_pylori_F32.fa"))


def bp_range(text: str) -> tuple[int, int]:
    """``"10-20"`` as ``(10, 20)``; ``"200"`` as ``(200, 200)``."""
    low, _, high = text.partition("-")
    try:
        return int(low), int(high or low)
    except ValueError:
        raise InputError(f"{text!r} is not a length or a range LOW-HIGH in bp (e.g. 200 or 10-20).") from None


def _jaspar_options(parser: argparse.ArgumentParser, selection: bool = True) -> None:
    if selection:
        parser.add_argument("--jaspar-collection", default="CORE", help="JASPAR collection (default: %(default)s)")
        parser.add_argument("--jaspar-taxon", default=None,
                            help="JASPAR taxonomic group, e.g. vertebrates, plants (default: all)")
    parser.add_argument("--jaspar-release", default=None, help="JASPAR release, e.g. JASPAR2024 (default: the latest "
                                                                 "the installed pyjaspar carries)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = parser_from_doc(PROG, __doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="{plant,learn,jaspar}")
    plant = commands.add_parser("plant", help="write a planted-motif task folder")
    plant.add_argument("--out", type=Path, required=True, help="output folder; must not exist or be empty")
    plant.add_argument("--fasta", type=Path, default=None, help="genome FASTA for the backgrounds (default: the "
                                                                 "bundled H. pylori genome)")
    plant.add_argument("--rule", choices=("presence", "one_of", "spacing"), default="presence",
                       help="presence: every --motif in each positive; one_of: one of them; spacing: A then B at "
                            "--spacing (default: %(default)s)")
    plant.add_argument("--motif", action="append", default=None,
                       help="JASPAR ID, repeatable (spacing: A then B; default: MA0139, and MA0148 for one_of and "
                            "spacing)")
    plant.add_argument("--num", type=int, default=2000, help="sequences in all, half positives (default: %(default)s)")
    plant.add_argument("--length", type=bp_range, default=(200, 200), help="sequence length, bp, or a range LOW-HIGH "
                                                                            "(default: 200)")
    plant.add_argument("--spacing", type=bp_range, default=(10, 20),
                       help="spacing rule: bp from A's end to B's start in positives (default: 10-20)")
    plant.add_argument("--far-spacing", type=bp_range, default=(40, 80),
                       help="spacing rule: that gap in 'far' negatives (default: 40-80)")
    plant.add_argument("--spacing-negatives", default="far,swapped",
                       help="spacing rule: negative kinds, in equal shares: far, swapped (default: %(default)s)")
    plant.add_argument("--val-fraction", type=float, default=0.1, help="(default: %(default)s)")
    plant.add_argument("--test-fraction", type=float, default=0.1, help="(default: %(default)s)")
    plant.add_argument("--seed", type=int, default=0, help="seed of every random draw (default: %(default)s)")
    _jaspar_options(plant, selection=False)
    learn = commands.add_parser("learn", help="TF-MoDISco + TOMTOM report of an attribution file")
    learn.add_argument("attributions", type=Path, help="HDF5 from python -m bigbird_dna.explain")
    learn.add_argument("--out", type=Path, required=True, help="output folder; must not exist or be empty")
    _jaspar_options(learn)
    learn.add_argument("--top-matches", type=int, default=3, help="JASPAR matches per pattern (default: %(default)s)")
    learn.add_argument("--max-seqlets", type=int, default=2000, help="per metacluster (default: %(default)s)")
    learn.add_argument("--window", type=int, default=21, help="seqlet core, bp (default: %(default)s)")
    learn.add_argument("--flank", type=int, default=10, help="bp added to each side of a core (default: %(default)s)")
    learn.add_argument("--min-seqlets", type=int, default=20, help="smallest pattern kept (default: %(default)s)")
    learn.add_argument("--leiden-runs", type=int, default=50,
                       help="Leiden clusterings per step; fewer is faster and noisier (default: %(default)s)")
    listing = commands.add_parser("jaspar", help="list JASPAR motifs: ID, name, taxon, consensus")
    _jaspar_options(listing)
    return parser.parse_args(argv)


def run_plant(args: argparse.Namespace) -> None:
    from bigbird_dna.genome import open_genome
    from bigbird_dna.motifs.jaspar import fetch_motifs, latest_release
    from bigbird_dna.motifs.planted import PlantedSettings, planted_task
    from bigbird_dna.motifs.task_folder import build_manifest, write_task_folder
    from bigbird_dna.runtime.atomic import check_new_output_dir

    out = check_new_output_dir(args.out)
    settings = PlantedSettings(
        rule=args.rule, num=args.num, length=args.length, spacing=args.spacing, far_spacing=args.far_spacing,
        negatives=tuple(filter(None, (k.strip() for k in args.spacing_negatives.split(",")))),
        val_fraction=args.val_fraction, test_fraction=args.test_fraction, seed=args.seed)
    release = args.jaspar_release or latest_release()
    motifs = fetch_motifs(args.motif or DEFAULT_MOTIFS[args.rule], release)
    fasta = args.fasta or sample_genome()
    with open_genome(fasta) as genome:
        task = planted_task(genome, motifs, settings)
    write_task_folder(out, task, build_manifest(task, motifs, settings, release, fasta))
    counts = ", ".join(f"{split} {len(items)}" for split, items in task.items())
    print(f"wrote {out}: {counts} sequences; {', '.join(f'{m.id} {m.name}' for m in motifs)}")


def run_learn(args: argparse.Namespace) -> None:
    from bigbird_dna.motifs.attributions import read_attributions
    from bigbird_dna.motifs.jaspar import fetch_collection, latest_release
    from bigbird_dna.motifs.learn import learn_motifs, require_motif_extras
    from bigbird_dna.motifs.modisco import ModiscoSettings
    from bigbird_dna.runtime.atomic import check_new_output_dir

    require_motif_extras()
    out = check_new_output_dir(args.out)
    if args.top_matches < 1:
        raise InputError(f"--top-matches must be at least 1, got {args.top_matches}.")
    settings = ModiscoSettings(max_seqlets=args.max_seqlets, sliding_window_size=args.window,
                               flank_size=args.flank, final_min_cluster_size=args.min_seqlets,
                               n_leiden_runs=args.leiden_runs)
    data = read_attributions(args.attributions)
    release = args.jaspar_release or latest_release()
    targets = fetch_collection(args.jaspar_collection, args.jaspar_taxon, release)
    jaspar = {"release": release, "collection": args.jaspar_collection.upper(), "taxon": args.jaspar_taxon}
    summary = learn_motifs(data, args.attributions, out, targets, jaspar, settings, args.top_matches)
    for row in summary["patterns"]:
        best = row["matches"][0] if row["matches"] else None
        match = f"{best['motif_id']} {best['name']} q={best['q_value']:.2g}" if best else "no match"
        print(f"{row['name']}: {row['seqlets']} seqlets, {row['consensus']}: {match}")
    print(f"wrote {out / 'report.md'} ({len(summary['patterns'])} patterns)")


def run_listing(args: argparse.Namespace) -> None:
    from bigbird_dna.motifs.jaspar import fetch_collection

    for motif in fetch_collection(args.jaspar_collection, args.jaspar_taxon, args.jaspar_release):
        print(f"{motif.id}\t{motif.name}\t{motif.taxon}\t{motif.consensus}")


@exit_on_input_error
def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    {"plant": run_plant, "learn": run_learn, "jaspar": run_listing}[args.command](args)


if __name__ == "__main__":
    main()
