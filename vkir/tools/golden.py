"""`vkir golden`: look after golden images from the command line.

    vkir golden fit IMAGE... --golden G    the tightest tolerances of every matching mode that
                                           pass every IMAGE against golden G (printed as
                                           keyword arguments of assert_image_matches)
    vkir golden stale DIR                  the approved images under DIR (a golden folder, or a
                                           tree of them) that no recorded run matched
"""

from __future__ import annotations


def cmd_fit(args) -> int:
    """`vkir golden fit`: print the proposals of vkir.golden_matching.fit_tolerances."""
    from vkir.golden_matching import fit_tolerances

    fit = fit_tolerances(args.images, args.golden, perceptual=not args.no_perceptual)
    print(f"tightest tolerances that pass {fit.images} image(s) against {args.golden}:")
    for line in fit.lines():
        print(f"  {line}")
    return 0


def cmd_stale(args) -> int:
    """`vkir golden stale`: one approved image a line; exit status 1 when there is one."""
    from vkir.golden_baselines import stale_images

    stale = stale_images(args.dir)
    for path in stale:
        print(path)
    if not stale:
        print(f"every approved image under {args.dir} was matched by a recorded run")
    return 1 if stale else 0


def add_command(sub) -> None:
    """Add `golden fit` and `golden stale` to the `vkir` parser's subcommands."""
    p = sub.add_parser("golden", help="golden images: fit tolerances, list stale approved images")
    golden = p.add_subparsers(dest="golden_command", required=True)
    q = golden.add_parser("fit", help="the tightest tolerances that pass every IMAGE against "
                                      "the golden")
    q.add_argument("images", nargs="+", metavar="IMAGE", help=".png or .npy pictures to approve")
    q.add_argument("--golden", required=True, metavar="G", help="the golden (.png or .npy)")
    q.add_argument("--no-perceptual", action="store_true",
                   help="skip SSIM and FLIP (scikit-image, flip-evaluator)")
    q.set_defaults(fn=cmd_fit)
    q = golden.add_parser("stale", help="approved images that no recorded run matched "
                                        "(records: golden/.cache/runs/)")
    q.add_argument("dir", metavar="DIR", help="a golden folder, or a tree of them")
    q.set_defaults(fn=cmd_stale)
