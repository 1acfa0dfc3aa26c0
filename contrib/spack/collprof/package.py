# Spack recipe for collprof (contrib/spack/collprof/package.py): copy the folder into a Spack
# repository (spack repo create; cp -r contrib/spack/collprof REPO/packages/) and
#   spack install collprof +mpi +gloo +ofi ~nccl
# Every variant maps to an explicit --with-X or --without-X, so what the build host happens
# to have installed never decides which backends are built.  Checked here statically
# (tests/integration/packaging.sh: it parses, and every flag it passes is one that
# ./configure --help lists); Spack is not in Debian, so it is not run here.

from spack.package import *


class Collprof(AutotoolsPackage, CudaPackage):
    """Profile collective communication (MPI, Gloo, libfabric, NCCL) on HPC clusters:
    exact results, a timestamped HDF5 file per run, and collprof-report to analyse them."""

    homepage = "https://github.com/collprof/collprof"
    git = "https://github.com/collprof/collprof.git"

    version("main", branch="main")

    variant("mpi", default=True, description="MPI backend (Open MPI)")
    variant("gloo", default=True, description="Gloo backend (C++)")
    variant("ofi", default=True, description="libfabric (OFI) backend")
    variant("nccl", default=False, description="NCCL backend (CUDA device buffers)")
    variant("slurm", default=True, description="Slurm job facts in the result files (libslurm)")
    variant("hdf5", default=True, description="HDF5 result files and collprof-report")

    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("pmix")
    depends_on("nettle")
    depends_on("mpi", when="+mpi")
    depends_on("gloo", when="+gloo")
    depends_on("libfabric", when="+ofi")
    depends_on("nccl", when="+nccl")
    depends_on("slurm", when="+slurm")
    depends_on("hdf5~mpi", when="+hdf5")
    depends_on("yajl", when="+hdf5")  # collprof-report import reads JSON with it
    conflicts("+nccl", when="~cuda", msg="the NCCL backend needs +cuda")

    def autoreconf(self, spec, prefix):
        Executable("./autogen.sh")()

    def configure_args(self):
        spec = self.spec
        args = ["--with-pmix={0}".format(spec["pmix"].prefix)]
        for name in ("mpi", "gloo", "ofi", "nccl", "slurm", "hdf5"):
            if spec.satisfies("+" + name):
                args.append("--with-{0}={1}".format(name, spec[name].prefix))
            else:
                args.append("--without-" + name)
        if spec.satisfies("+hdf5"):
            args.append("--with-yajl={0}".format(spec["yajl"].prefix))
        if spec.satisfies("+cuda"):
            args.append("--with-cuda={0}".format(spec["cuda"].prefix))
        else:
            args.append("--without-cuda")
        args.append("--without-ofi-cuda")
        return args

    def setup_run_environment(self, env):
        env.prepend_path("MANPATH", self.prefix.share.man)
        env.set("COLLPROF_ROOT", self.prefix)

    def test_version(self):
        """collprof --version and collprof-report --help run"""
        Executable(self.prefix.bin.collprof)("--version")
        Executable(join_path(self.prefix.bin, "collprof-report"))("--help")
